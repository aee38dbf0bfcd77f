"""DeepSpeed's side of a plan: Plan -> ds_config (``config``), reading a ds_config file (``read``) and
turning a copied one into a Plan (``import_config``, ``mapping``), the keys the installed DeepSpeed
knows (``keys``), and what its just-in-time op builds need (``opbuild``).

May import: ``plan``, ``model`` and the base modules.
"""
