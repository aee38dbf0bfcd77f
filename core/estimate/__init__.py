"""What a plan costs before it runs: the memory budget per GPU, host RAM and NVMe (``budget``, with
``activations`` and the measured ``calibration``), DeepSpeed's own estimators for comparison, the
step-time model (``speed``) and the recommender that ranks plans that fit (``recommend``).

May import: ``deepspeed``, ``model``, ``hardware``, ``plan`` and the base modules. Never ``events``:
readers of a run get the estimate it was launched with from the run itself.
"""
