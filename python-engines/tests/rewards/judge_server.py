"""A judge for llm_judge tests: a small OpenAI-compatible chat server that answers a script of replies and records what it was asked."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedJudge:
    """Answers /v1/chat/completions with the next reply of `replies` (the last one repeats); a reply of None is a 500."""

    def __init__(self, replies):
        self.replies, self.asked = list(replies), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.asked.append(body)
                reply = outer.replies.pop(0) if len(outer.replies) > 1 else outer.replies[0]
                status, payload = (500, {"error": "boom"}) if reply is None else (200, {"choices": [{"message": {"role": "assistant", "content": reply}}]})
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
