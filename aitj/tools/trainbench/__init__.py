"""``make bench-real``: the recovery users feel, read from real training on real nodes.

- ``timeline``: a launcher's timestamped log as Step and Reset events (pure).
- ``recovery``: per fault, seconds to training running again and to full width, steps redone;
  the pace of a stretch of training (pure).
- ``report``: the table and results.json of a run (pure but for writing the files).

The faults are made by tests/e2e/real/test_training_recovery.py, on the real-node cluster.
"""
