"""End-to-end tests on real nodes: containers that really run (docs/real-nodes.md)."""
