"""A real S3 endpoint for the tests of this folder: moto's server on a free 127.0.0.1 port, once
per module, with AWS's authentication on (a request signed with unknown or wrong credentials is
refused), so that only the credentials a session gives reach the bucket."""

from __future__ import annotations

import functools
import json
import os
import threading
import urllib.request
from dataclasses import dataclass

import pytest

from hudiql.io.storage import OPTIONS_VARIABLE

BUCKET = "lake"
REGION = "us-east-1"
#: The AWS variables a test's environment must not carry (the storage options say everything).
AWS_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
                 "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE")


@dataclass(frozen=True)
class S3:
    endpoint: str
    access_key: str
    secret_key: str

    @property
    def options(self) -> dict[str, str]:
        """hudiql's storage options for this endpoint."""
        return {"aws_access_key_id": self.access_key, "aws_secret_access_key": self.secret_key,
                "aws_endpoint_url": self.endpoint, "aws_region": REGION}

    @property
    def official_options(self) -> dict[str, str]:
        """The official reader's (object_store's) options: the same names, plus plain HTTP."""
        return {**self.options, "aws_allow_http": "true"}


#: The object requests moto's server answers one at a time (see ``_one_at_a_time``).
_SERIALIZED = ("put_object", "get_object", "head_object", "delete_object")


def _one_at_a_time(lock: threading.Lock, request):
    """moto's PutObject checks ``If-None-Match: *`` and then stores the object, in two steps that
    two request threads may interleave, and a GetObject racing a DeleteObject of the same key can
    fail inside moto (INTERNAL_FAILURE); S3 does each at once, and the table lock relies on it."""

    @functools.wraps(request)
    def serialized(*args, **kwargs):
        with lock:
            return request(*args, **kwargs)

    return serialized


@pytest.fixture(scope="module")
def s3(spark, tmp_path_factory):
    import boto3
    import moto.settings
    from moto.s3.responses import S3Response
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    # moto keeps its state per process, not per server: each module's server starts from nothing.
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")).close()
    anyone = {"endpoint_url": endpoint, "region_name": REGION, "aws_access_key_id": "setup", "aws_secret_access_key": "setup"}
    iam = boto3.client("iam", **anyone)
    iam.create_user(UserName="hudiql")
    iam.put_user_policy(UserName="hudiql", PolicyName="all", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    key = iam.create_access_key(UserName="hudiql")["AccessKey"]
    boto3.client("s3", **anyone).create_bucket(Bucket=BUCKET)
    with pytest.MonkeyPatch.context() as patch:
        for variable in AWS_VARIABLES:
            patch.delenv(variable, raising=False)
        patch.setenv("AWS_CONFIG_FILE", str(tmp_path_factory.mktemp("aws") / "config"))  # no ~/.aws of the machine
        patch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path_factory.mktemp("aws") / "credentials"))
        patch.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # from now on, requests are authenticated
        lock = threading.Lock()
        for name in _SERIALIZED:
            patch.setattr(S3Response, name, _one_at_a_time(lock, getattr(S3Response, name)))
        yield S3(endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        # The options of this module's sessions are not the next tests'.
        os.environ.pop(OPTIONS_VARIABLE, None)
        spark.sparkContext.environment.pop(OPTIONS_VARIABLE, None)
    server.stop()
