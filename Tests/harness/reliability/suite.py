"""The bookkeeping every scenario writes to: Suite holds the run's arguments, working
directory and random generator, prints (say), records failed checks (check) and known, reported
defects (known: failures only with --strict), and collects the figures of the JSON report."""
import os
import random
import tempfile


class Suite:
    """One run's bookkeeping: its arguments, working directory, random generator (--seed), the
    figures of the JSON report, the failures and the known issues."""

    def __init__(self, args):
        self.args = args
        self.pacer = args.pacer
        self.workdir = args.workdir or tempfile.mkdtemp(prefix="pacer-reliability.")
        os.makedirs(self.workdir, exist_ok=True)
        self.figures = {}
        self.failures = []
        self.known_issues = []
        self.rng = random.Random(args.seed)

    def say(self, text):
        print(text, flush=True)

    def check(self, scenario, ok, text):
        if not ok:
            self.failures.append(f"{scenario}: {text}")
            self.say(f"  FAIL {text}")
        return ok

    def known(self, scenario, ok, text):
        """A check that fails on a known, reported defect: printed and recorded as a known issue;
        a failure only with --strict (so the reduced CI run stays green until it is fixed)."""
        if ok:
            return True
        if self.args.strict:
            return self.check(scenario, ok, text)
        self.known_issues.append(f"{scenario}: {text}")
        self.say(f"  KNOWN ISSUE {text}")
        return False

    def dir(self, name):
        path = os.path.join(self.workdir, name)
        os.makedirs(path, exist_ok=True)
        return path
