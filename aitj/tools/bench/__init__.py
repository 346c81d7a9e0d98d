"""``aitj dev bench`` (``make bench``): recovery, scaling, API cost, CPU and memory of the operator
on the local control plane, against a floor client and the Job controller in the same run.
Figures, never assertions: each row states its bar and whether this run met it.

- ``run``: the whole run (``run_bench``) and its shapes (FULL, QUICK, SMOKE).
- ``scenarios``: the trials (force delete, exit code, node NotReady, scale, bring-up, restart).
- ``session``: the run's cluster, clients, watches and processes.
- ``workload``: namespaces, node pools, the AITrainingJobs, how pods are read.
- ``floor``: the floor client (a process of its own); ``peer``: the Job controller's Jobs.
- ``watcher``: the harness's own list+watch, where every latency ends.
- ``large``: F12 and F13's phase: one large job on a pool of its own, against the Job controller.
- ``procstat``: the operator's CPU and RSS from /proc; ``apimetrics``: apiserver_request_total;
  ``opmetrics``: the operator's passes from its own /metrics.
- ``stats``, ``bars``, ``figures``, ``largefigures``: pure: percentiles, rows with their bars,
  the table (``largefigures``: F12's and F13's rows).
- ``report``: table.md, results.json, the PNG plots.
"""
