"""Using a run's result: a run's weights loaded for generation (``weights``), prompts rendered and
answers streamed (``generate``), and held-out perplexity and ROUGE-L (``evaluate``).

May import: ``export``, ``run`` and everything below them.
"""
