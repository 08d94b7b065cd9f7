#!/usr/bin/env python3
"""Compare the wall time of two `pld` binaries on one command line, alternating them.

Usage: python3 scripts/ab_timing.py RUNS BINARY_A BINARY_B [pld arguments ...]

Each round runs A and B once (whole processes, output discarded; which goes first
alternates from round to round); the medians and minima over RUNS rounds are printed with
the ratio B/A. Alternating keeps slow drifts of a shared, noisy machine out of the ratio;
report ratios, not absolute times. Standard library only.

Both binaries are first copied into one temporary directory and timed from there: the file
the linker wrote (`target/release/pld`) starts about 5% slower than a copy of the same bytes
(measured on this project's 2-vCPU machine, twice, with `cp` copies as the control: B/A
1.053 and 1.067 against 1.001 for two copies), so timing it against a copied older build
would charge the new build for how its file was written.

With PAUSE=SECONDS in the environment, every run waits that long first: a user runs `pld` once after a pause, and on the test
machine that is not the same as back to back (its balloon hands freed memory back to the
host, so fresh pages, huge pages above all, must be supplied again). Huge-page advice that
made runs back to back 5-11% faster made them 1.2-1.7x slower 3-8 s apart
(src/bin/pld/allocator.rs).

Example (the session's own build against an older one):
    python3 scripts/ab_timing.py 31 /tmp/pld_old target/release/pld \\
        epsilon --sigma 1 --sampling-rate 0.01 --steps 10000 --delta 1e-5 --grid-step 1e-4
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    runs, first, second, args = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
    times = ([], [])
    with tempfile.TemporaryDirectory() as scratch:
        copies = []
        for name, binary in (("a", first), ("b", second)):
            copy = os.path.join(scratch, name)
            shutil.copyfile(binary, copy)
            os.chmod(copy, 0o755)
            copies.append(copy)
        pause = float(os.environ.get("PAUSE", "0"))
        for round_index in range(runs):
            order = list(zip(copies, times))
            if round_index % 2 == 1:
                order.reverse()
            for binary, spent in order:
                time.sleep(pause)
                start = time.perf_counter()
                subprocess.run(
                    [binary, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    check=True,
                )
                spent.append((time.perf_counter() - start) * 1000.0)
    a, b = statistics.median(times[0]), statistics.median(times[1])
    print(f"A {first}: median {a:.2f} ms (min {min(times[0]):.2f})")
    print(f"B {second}: median {b:.2f} ms (min {min(times[1]):.2f})")
    print(f"B/A {b / a:.3f}")


if __name__ == "__main__":
    main()
