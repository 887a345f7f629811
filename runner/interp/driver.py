"""Sandgate's stateful Python interpreter driver.

The runner (runner/interp) starts this file once per sandbox and talks to
it over two dedicated pipes, never over the user's stdout:

  fd 3  requests, one JSON object a line:
        {"cell": n, "code": "...", "fence": "..."}
  fd 4  replies, one JSON object a line: first {"ready": true, ...}, then
        one per request: {"cell": n, "result", "has_result", "error",
        "error_name", "figures": [base64 PNG], "figures_omitted",
        "result_cut", "fenced"}

fd 1 and fd 2 are pipes the runner reads; whatever the cell writes there,
from Python, C code or child processes, is the cell's output. After a
cell the driver writes the request's fence to both, so that the runner
knows where the cell's output ends; the runner strips it.

A timeout is a SIGINT from the runner: the driver's handler raises
KeyboardInterrupt in the cell, once per cell, and only while a cell runs,
so the driver's own bookkeeping is never interrupted and the user's
state survives.
"""

import ast
import base64
import builtins
import io
import json
import linecache
import os
import signal
import sys
import traceback
import types
import warnings

REQUESTS_FD, REPLIES_FD = 3, 4
RESULT_CAP = 64 << 10  # characters of a result's repr
ERROR_CAP = 64 << 10  # characters of a traceback
FIGURES_CAP = 8 << 20  # bytes of PNG per cell


class _State:
    armed = False  # a SIGINT now raises KeyboardInterrupt (once)


_state = _State()
_driver_pid = os.getpid()


def _on_sigint(signum, frame):
    if _state.armed:
        _state.armed = False
        raise KeyboardInterrupt


def _cut(text, cap):
    """Returns text cut to cap characters (head and tail kept) and whether it was."""
    if len(text) <= cap:
        return text, False
    half = cap // 2
    return "%s\n... [%d characters cut] ...\n%s" % (text[:half], len(text) - 2 * half, text[-half:]), True


def _without_driver(te):
    """Drops the driver's frames from te and the exceptions chained to it."""
    seen = set()
    todo = [te]
    while todo:
        te = todo.pop()
        if te is None or id(te) in seen:
            continue
        seen.add(id(te))
        te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename != __file__])
        todo += [te.__cause__, te.__context__] + list(getattr(te, "exceptions", None) or [])


def _set_error(res, exc):
    """Fills res with exc's traceback, without the driver's own frames."""
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    _without_driver(te)
    res["error"], _ = _cut("".join(te.format()), ERROR_CAP)
    res["error_name"] = type(exc).__name__


def _run(code, filename, ns, res):
    """Runs code like a notebook cell: the last statement, when it is an
    expression, is evaluated and its repr returned."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        tree = ast.parse(code, filename, "exec")
    except SyntaxError as exc:
        raise exc.with_traceback(None)  # the frames are the parser's, not the user's
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, filename, "exec"), ns)
    if last is not None:
        value = eval(compile(last, filename, "eval"), ns)
        if value is not None:
            ns["_"] = value
            res["result"], res["result_cut"] = _cut(repr(value), RESULT_CAP)
            res["has_result"] = True


def _figures(res):
    """Saves every open matplotlib figure as PNG and closes it. Only when
    the user imported pyplot: the driver never imports matplotlib itself."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    total = 0
    for num in plt.get_fignums():
        fig = plt.figure(num)
        try:
            buf = io.BytesIO()
            fig.savefig(buf, format="png")
            png = buf.getvalue()
            if total + len(png) > FIGURES_CAP:
                res["figures_omitted"] = res.get("figures_omitted", 0) + 1
            else:
                total += len(png)
                res["figures"].append(base64.b64encode(png).decode("ascii"))
        except Exception as exc:  # a figure that cannot be drawn is reported, not fatal
            print("[figure %d could not be saved: %s: %s]" % (num, type(exc).__name__, exc), file=sys.stderr)
        finally:
            plt.close(fig)


def _cell(req, ns):
    filename = "<cell %d>" % req["cell"]
    res = {"cell": req["cell"], "has_result": False, "figures": []}
    # The user may have replaced the handler in an earlier cell; a timeout
    # must still interrupt this one.
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        _state.armed = True
        try:
            _run(req["code"], filename, ns, res)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt end the cell, not the driver
            _set_error(res, exc)
        if os.getpid() != _driver_pid:
            os._exit(0)  # a child the cell forked must not take over the driver's pipes
        try:
            _figures(res)
        except BaseException as exc:
            if "error" not in res:
                _set_error(res, exc)
    except BaseException as exc:  # the one KeyboardInterrupt landed in the driver's code
        if "error" not in res:
            _set_error(res, exc)
    finally:
        _state.armed = False
    return res


def _flush():
    for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            f.flush()
        except Exception:
            pass


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def _fence(fds, fence):
    """Writes fence to both output pipes; reports whether it could."""
    try:
        for fd in fds:
            _write_all(fd, fence)
        return True
    except OSError:
        return False


def main():
    for fd in (REQUESTS_FD, REPLIES_FD):
        os.set_inheritable(fd, False)  # child processes must not hold the control pipes
    requests = os.fdopen(REQUESTS_FD, "rb")
    replies = os.fdopen(REPLIES_FD, "wb")
    # Private copies of the output pipes: the fence reaches the runner even
    # if the user redirects fd 1 or fd 2.
    fence_fds = (os.dup(1), os.dup(2))
    # Line-buffered, as on a terminal: a print reaches the runner in one
    # write at its newline instead of one per piece, so that a streamed
    # cell's output arrives in whole lines as it is printed. A partial
    # line goes when the cell flushes it or ends (_flush). Child
    # processes keep PYTHONUNBUFFERED.
    for f in (sys.stdout, sys.stderr):
        try:
            f.reconfigure(line_buffering=True, write_through=False)
        except (AttributeError, ValueError):
            pass

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warnings.filterwarnings("ignore", message=r"(?s).*(non-interactive|non-GUI backend)")
    main_mod = types.ModuleType("__main__")
    main_mod.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main_mod
    sys.argv = [""]
    sys.path[0] = ""  # imports from the working directory, as in an interactive session
    ns = main_mod.__dict__

    def reply(obj):
        replies.write(json.dumps(obj).encode("ascii") + b"\n")
        replies.flush()

    reply({"ready": True, "python": sys.version.split()[0], "pid": os.getpid()})
    while True:
        line = requests.readline()
        if not line:
            return
        req = json.loads(line)
        res = _cell(req, ns)
        _flush()
        res["fenced"] = _fence(fence_fds, req["fence"].encode("ascii"))
        reply(res)


if __name__ == "__main__":
    main()
