"""Leaving zerotui: a plan as files for the plain ``deepspeed`` launcher (``launch_files``), and a run's
result as a Hugging Face model folder (``merge``).

May import: ``run`` and everything below it.
"""
