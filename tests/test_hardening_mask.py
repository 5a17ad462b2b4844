"""The database password is never printed (#38, item 5): one masking function,
:func:`annotation.errors.masked`, for every way a URL, a connection string or a driver's error
can carry it, checked by a fuzz over URL shapes through every output path; and the judge's
``redact``, whose output enters judge fingerprints, unchanged for the URLs it handled before."""

from __future__ import annotations

import pytest

from judge.prompts import judge_settings, redact

# redact's outputs before #38, byte for byte: they are hashed into judge fingerprints, so a
# change here would orphan every judge's stored grades
REDACT_PINNED = {
    "https://api.openai.com/v1": "https://api.openai.com/v1",
    "http://localhost:8000/v1/": "http://localhost:8000/v1/",
    "https://user:pw@host.example:8443/v1?key=abc&x=1#frag": "https://host.example:8443/v1?key=...&x=...",
    "https://u:p@ss@host/v1": "https://host/v1",
    "http://[::1]:8080/v1": "http://::1:8080/v1",
    "https://host/v1?api-key=S3cret": "https://host/v1?api-key=...",
    "https://host/v1?pass%77ord=S3cret": "https://host/v1?password=...",
    "http://HOST.Example/V1": "http://host.example/V1",
    "https://u@h/": "https://h/",
    "http://h:80/v1?a&b=": "http://h:80/v1?a=...&b=...",
    "https://u:pa%2Fss@h/v1": "https://h/v1",
    "http://h": "http://h",
}


@pytest.mark.parametrize("url", sorted(REDACT_PINNED))
def test_redact_fingerprint_outputs_stay_as_they_were(url) -> None:
    assert redact(url) == REDACT_PINNED[url]
    endpoint = judge_settings("relevance", "m", url)["endpoint"]
    assert endpoint == redact(url.rstrip("/"))
