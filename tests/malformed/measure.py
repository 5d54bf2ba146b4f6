"""`python measure.py RESULT_FILE CMD...`: run CMD, write "exit_code peak_rss_bytes" to RESULT_FILE.

Why a launcher: a child's `ru_maxrss` (wait4) includes the RSS of the process that forked it, up to its exec
(Linux keeps the old memory's high-water mark across exec). Measured straight from pytest, a child would
report pytest's own peak (hundreds of MB after other tests); forked from this small launcher, it reports
its own peak plus at most this launcher's few MB.
"""

import os
import subprocess
import sys


def main() -> None:
    result, cmd = sys.argv[1], sys.argv[2:]
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    with open(result, "w") as f:
        f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss * 1024}")


if __name__ == "__main__":
    main()
