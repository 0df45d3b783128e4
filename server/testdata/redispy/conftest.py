# bloomkit's replacement for redis-py's tests/conftest.py: the only
# adaptation of redis-py's own test_bloom.py (copied unchanged from redis-py
# v4.3.4, MIT licence in LICENSE) is the connection, to the bloomkit server
# the Go test (server/redispy_test.go) started at $BLOOMKIT_ADDR.
import os

import pytest
import redis


@pytest.fixture()
def modclient():
    host, port = os.environ["BLOOMKIT_ADDR"].rsplit(":", 1)
    client = redis.Redis(host=host, port=int(port), decode_responses=True)
    client.flushdb()
    yield client
    client.close()


def pytest_configure(config):
    for marker in ("redismod", "experimental", "onlynoncluster", "onlycluster"):
        config.addinivalue_line("markers", marker)
