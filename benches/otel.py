#!/usr/bin/env python3
"""What OpenTelemetry costs per request, in instructions (callgrind, through
benches/instructions.py): the reference example built without `otel`, built
with it but exporting nothing (no OTEL_EXPORTER_OTLP_ENDPOINT), and built
with it exporting every span over OTLP/HTTP to a sink on loopback that
answers and drops them (the exporter's thread counts too).

    python3 benches/otel.py --plain target/release/examples/reference \\
        --otel path/to/reference-built-with-otel [--cells mcp-stdio-d1,mcp26-http-c1] [--calls 1000]

Prints one line per build and cell.
"""

import argparse
import http.server
import os
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))


class Sink(http.server.BaseHTTPRequestHandler):
    """Takes an OTLP/HTTP export and drops it (an empty response is a
    valid ExportTraceServiceResponse)."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def run(binary, cells, calls, env):
    out = subprocess.run([sys.executable, os.path.join(HERE, "instructions.py"), "--binary", binary,
                          "--cells", cells, "--calls", str(calls)],
                         capture_output=True, text=True, env=env, check=True).stdout
    return [line for line in out.splitlines() if "instructions/request" in line]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plain", required=True, help="the reference example built without otel")
    parser.add_argument("--otel", required=True, help="the reference example built with otel")
    parser.add_argument("--cells", default="mcp-stdio-d1,mcp26-stdio-d1,mcp-http-c1,mcp26-http-c1")
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    quiet = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    sink = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    exporting = dict(quiet, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{sink.server_address[1]}",
                     OTEL_SERVICE_NAME="bench")
    try:
        for name, binary, env in [("without otel", args.plain, quiet),
                                  ("otel, no exporter", args.otel, quiet),
                                  ("otel, exporting", args.otel, exporting)]:
            for line in run(binary, args.cells, args.calls, env):
                print(f"{name:18} {line}", flush=True)
    finally:
        sink.shutdown()


if __name__ == "__main__":
    main()
