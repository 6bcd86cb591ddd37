# A pytest fixture for Burrow, with Python's standard library only: `npx burrow` in the background,
# its --ready-file for where it listens and its keys, a reset before each test.
import json
import os
import subprocess
import tempfile
import time
import urllib.request

import pytest


@pytest.fixture(scope="session")
def burrow():
    with tempfile.TemporaryDirectory() as tmp:
        ready_file = os.path.join(tmp, "ready.json")
        server = subprocess.Popen(["npx", "burrow", "--port", "0", "--quiet", "--ready-file", ready_file])
        try:
            deadline = time.monotonic() + 60
            while not os.path.exists(ready_file):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"burrow did not start (exit status {server.poll()})")
                time.sleep(0.05)
            with open(ready_file) as f:
                yield json.load(f)
        finally:
            server.terminate()
            server.wait()


def call(url, token, method, path, body=None):
    """One JSON request; answers (status, decoded body)."""
    request = urllib.request.Request(
        url + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Ngrok-Version": "2"},
    )
    try:
        with urllib.request.urlopen(request) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture
def api(burrow):
    """Calls the API with the admin key, after returning Burrow to its starting state."""
    call(burrow["url"], burrow["operator_token"], "POST", "/_burrow/reset", {})
    return lambda method, path, body=None: call(burrow["url"], burrow["api_key"], method, path, body)
