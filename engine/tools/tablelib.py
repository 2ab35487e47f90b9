"""What the measurement scripts of this folder share (ratios.py, replication_table.py, cc_table.py)."""
import subprocess
import sys


def sh(cmd, timeout=600):
    """Runs `cmd`; its stdout, or exits with its output when it fails."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p.stdout


def only(names, wanted):
    """The registered `names` a --protocols list (comma-separated, or None: all) asks for; exits on an unknown one."""
    if not wanted:
        return names
    wanted = wanted.split(",")
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        sys.exit(f"--protocols: {', '.join(unknown)} not registered (rdxd --list: {', '.join(names)})")
    return [n for n in names if n in wanted]
