"""``zerotui doctor``: the report (``report``), the subprocess that asks torch and DeepSpeed what they
can do (``probe``), and the known pitfalls with their fixes (``pitfalls``).

May import: ``hardware``, ``deepspeed`` and the base modules.
"""
