"""inspect_ai against `prefflow bench budget`'s rate-limited loopback provider, with its defaults.

Usage (run by `prefflow bench budget --inspect-python PYTHON`, see BENCHMARKS.md):
    PYTHON scripts/bench_inspect_budget.py BASE_URL N SYSTEM_FILE LOG_DIR

N samples, each the same system prompt (SYSTEM_FILE) and one short user line, through one
`generate()` with model `openai/m0` at BASE_URL over chat completions; nothing else is
configured, so connections, retries and backoff are inspect_ai's defaults. Prints the samples that errored.
inspect_ai is installed with pip in a virtual environment outside the repository, never here.
"""

import sys

from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.solver import generate


def main() -> int:
    base_url, n, system_file, log_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    with open(system_file, encoding="utf-8") as f:
        system = f.read()
    samples = [
        Sample(
            input=[ChatMessageSystem(content=system), ChatMessageUser(content=f"m0-{i:06}")],
            target="ok",
        )
        for i in range(n)
    ]
    logs = inspect_eval(
        Task(dataset=samples, solver=generate()),
        model="openai/m0",
        model_base_url=base_url,
        # The provider speaks chat completions, as prefflow does; inspect's `openai/` models
        # default to the Responses API.
        model_args={"responses_api": False},
        log_dir=log_dir,
        display="none",
    )
    errored = sum(1 for s in (logs[0].samples or []) if s.error)
    print(f"status={logs[0].status} samples={n} errored={errored}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
