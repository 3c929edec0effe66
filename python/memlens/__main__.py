"""python3 -m memlens record [-o FILE] [--] SCRIPT ARGS... | -m MODULE ARGS... | -c CODE ARGS...

Runs a Python program under the recorder as `python3 SCRIPT ARGS...` would (same
sys.argv, `__name__ == "__main__"`, the script's folder first on sys.path); _launch.py
says when the recording ends and what is alive then. `memlens record -- python3 ...`
runs this.
"""
import argparse
import os
import sys


def _parser():
    p = argparse.ArgumentParser(prog="python3 -m memlens", description="memlens for PyTorch programs")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("record", help="run a Python program under the recorder",
                       description="Run a Python program under memlens' recorder; writes a .memtrace.",
                       epilog="Example: python3 -m memlens record -o run.memtrace train.py --epochs 2")
    r.add_argument("-o", "--output", help="trace to write (default memlens-SCRIPT.memtrace)")
    what = r.add_mutually_exclusive_group()
    what.add_argument("-m", dest="module", help="run a library module as a script")
    what.add_argument("-c", dest="code", help="run a program passed as a string")
    r.add_argument("program", nargs=argparse.REMAINDER, help="SCRIPT ARGS... (ARGS only with -m or -c)")
    return p


def _run(args):
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if args.module:
        name, argv = args.module, [args.module] + program
    elif args.code is not None:
        name, argv = "-c", ["-c"] + program
    elif program:
        name, argv = program[0], program
        if not os.path.isfile(name):
            sys.stderr.write("python3 -m memlens record: %s: no such file\n" % name)
            return 2
    else:
        sys.stderr.write("python3 -m memlens record: no program given (SCRIPT, -m MODULE or -c CODE)\n")
        return 2
    output = args.output or "memlens-%s.memtrace" % os.path.splitext(os.path.basename(name))[0].lstrip("-")
    try:
        import torch  # noqa: F401 - the recorder is for PyTorch programs
    except ImportError as e:
        sys.stderr.write("python3 -m memlens record: cannot import torch (%s)\n" % e)
        return 2
    from . import _launch

    try:
        launch = _launch.Launch(output, name, argv, module=args.module, code_text=args.code)
    except (ImportError, SyntaxError, OSError, RuntimeError) as e:
        sys.stderr.write("python3 -m memlens record: %s\n" % e)
        return 2
    return launch.run()


def main():
    return _run(_parser().parse_args())


if __name__ == "__main__":
    sys.exit(main())
