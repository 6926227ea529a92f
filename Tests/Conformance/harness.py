"""Helpers shared by the conformance suites (imported by conftest.py and the tests)."""

import json

import firebase_admin
import requests

# The namespace used by the hearth suites (the first DNS label of the database URL).
NAMESPACE = 'hearth-conformance'
DATABASE_URL = f'https://{NAMESPACE}.firebaseio.com'
PROJECT_ID = 'hearth-conformance-project'

# Client-side HTTP timeout for firebase_admin apps, so a hung request fails a
# test instead of stalling CI for the SDK's default 120 s.
HTTP_TIMEOUT = 20


def make_app(name, database_url=DATABASE_URL, **options):
    """Initialises a firebase_admin app talking to the emulator host set by hearth_server."""
    opts = {'databaseURL': database_url, 'projectId': PROJECT_ID, 'httpTimeout': HTTP_TIMEOUT}
    opts.update(options)
    # In emulator mode firebase_admin.db ignores the app credential and sends
    # `Authorization: Bearer owner`, so no real credential is needed.
    return firebase_admin.initialize_app(None, opts, name=name)


class Rest:
    """Raw REST access to one namespace, for checks the SDK cannot express."""

    def __init__(self, base_url, ns, token='owner'):
        self.base_url = base_url
        self.ns = ns
        self.token = token
        self.session = requests.Session()

    def url(self, path):
        path = path.strip('/')
        return f'{self.base_url}/{path}.json' if path else f'{self.base_url}/.json'

    def request(self, method, path, params=None, json_body=None, data=None, headers=None,
                auth=True, timeout=HTTP_TIMEOUT, **kwargs):
        all_params = dict(params or {})
        all_params.setdefault('ns', self.ns)
        hdrs = dict(headers or {})
        if auth and self.token:
            hdrs.setdefault('Authorization', f'Bearer {self.token}')
        if json_body is not None:
            data = json.dumps(json_body).encode('utf-8')
            hdrs.setdefault('Content-Type', 'application/json')
        return self.session.request(method, self.url(path), params=all_params, data=data,
                                    headers=hdrs, timeout=timeout, **kwargs)

    def get(self, path, **kw):
        return self.request('GET', path, **kw)

    def put(self, path, value, **kw):
        return self.request('PUT', path, json_body=value, **kw)

    def put_rules(self, rules):
        """Installs `{"rules": rules}` as admin; returns the response."""
        body = json.dumps({'rules': rules}).encode('utf-8')
        return self.request('PUT', '.settings/rules', data=body,
                            headers={'Content-Type': 'application/json; charset=utf-8'})
