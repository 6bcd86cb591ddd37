from conftest import call


def test_creates_a_credential(api):
    status, credential = api("POST", "/credentials", {"acl": ["bind:app.example.com"]})
    assert status == 201
    assert credential["acl"] == ["bind:app.example.com"]


def test_each_test_starts_afresh(api):
    status, page = api("GET", "/credentials")
    assert status == 200
    assert page["credentials"] == []


def test_sees_the_api_fail(burrow, api):
    call(burrow["url"], burrow["operator_token"], "POST", "/_burrow/faults", {"operation": "credentials.list", "error": {"status": 503}, "times": 1})
    status, error = api("GET", "/credentials")
    assert status == 503
    assert error["status_code"] == 503
    assert api("GET", "/credentials")[0] == 200
