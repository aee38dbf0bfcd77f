"""Where things are, for tests in any tier."""
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
CORPUS = TESTS / "corpus"
FIXTURES = TESTS / "fixtures"
HELPERS = TESTS / "helpers"
#: ``python tests/helpers/worker_helpers.py RUN_DIR``: the real worker around a small real training loop.
WORKER_HELPER = HELPERS / "worker_helpers.py"
ENGINE_RUNNER = HELPERS / "engine_runner.py"
FAULT_SCRIPTS = REPO / "scripts" / "faults"
