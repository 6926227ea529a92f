"""Conformance suite: firebase_admin.auth against `hearth serve --emulator`.

firebase_admin talks to the Authentication API through FIREBASE_AUTH_EMULATOR_HOST (set by the
session fixture), sending `Authorization: Bearer owner`; end-user calls (sign-in) go over raw REST
with an API key, as the client SDKs do. Spec: /work/shared/docs/auth-storage.md §3-§6.
"""

import datetime
import time
import uuid

import pytest
import requests

from firebase_admin import auth

from harness import HTTP_TIMEOUT, PROJECT_ID, Rest

API_KEY = 'fake-api-key'


def unique(prefix):
    return f'{prefix}-{uuid.uuid4().hex[:10]}'


def rest_call(server, operation, body, host='identitytoolkit.googleapis.com/v1'):
    """An end-user call with an API key; returns (status, json)."""
    response = requests.post(f'{server.base_url}/{host}/{operation}', params={'key': API_KEY},
                             json=body, timeout=HTTP_TIMEOUT)
    return response.status_code, response.json()


def sign_in(server, email, password):
    status, body = rest_call(server, 'accounts:signInWithPassword',
                             {'email': email, 'password': password, 'returnSecureToken': True})
    assert status == 200, body
    return body


@pytest.fixture
def new_user(fb_app):
    """A fresh email/password user created through firebase_admin; deleted afterwards."""
    email = f'{unique("user")}@example.com'
    user = auth.create_user(email=email, password='secret-password', display_name='New User', app=fb_app)
    yield user
    try:
        auth.delete_user(user.uid, app=fb_app)
    except auth.UserNotFoundError:
        pass


def test_create_get_update_and_delete_a_user(fb_app):
    uid = unique('ada')
    created = auth.create_user(uid=uid, email=f'{uid}@Example.com', password='secret-password',
                               display_name='Ada', photo_url='https://example.com/ada.png',
                               email_verified=True, phone_number='+15555550100', app=fb_app)
    assert created.uid == uid
    assert created.email == f'{uid}@example.com'
    assert created.display_name == 'Ada'
    assert created.photo_url == 'https://example.com/ada.png'
    assert created.email_verified is True
    assert created.phone_number == '+15555550100'
    assert created.disabled is False
    assert created.user_metadata.creation_timestamp > 0
    assert {p.provider_id for p in created.provider_data} == {'password', 'phone'}

    fetched = auth.get_user(uid, app=fb_app)
    assert fetched.email == created.email
    assert auth.get_user_by_email(f'{uid}@EXAMPLE.com', app=fb_app).uid == uid

    updated = auth.update_user(uid, display_name='Ada L.', email=f'{uid}-new@example.com',
                               photo_url=auth.DELETE_ATTRIBUTE, app=fb_app)
    assert updated.display_name == 'Ada L.'
    assert updated.email == f'{uid}-new@example.com'
    assert updated.photo_url is None
    assert updated.tokens_valid_after_timestamp > 0

    auth.delete_user(uid, app=fb_app)
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user(uid, app=fb_app)
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user_by_email(f'{uid}-new@example.com', app=fb_app)


def test_duplicates_and_missing_users_raise_the_sdks_errors(fb_app, new_user):
    with pytest.raises(auth.EmailAlreadyExistsError):
        auth.create_user(email=new_user.email, app=fb_app)
    with pytest.raises(auth.UidAlreadyExistsError):
        auth.create_user(uid=new_user.uid, app=fb_app)
    with pytest.raises(auth.UserNotFoundError):
        auth.update_user(unique('nobody'), display_name='x', app=fb_app)
    with pytest.raises(auth.UserNotFoundError):
        auth.delete_user(unique('nobody'), app=fb_app)


def test_custom_claims_reach_the_user_and_its_next_id_token(fb_app, hearth_server, new_user):
    auth.set_custom_user_claims(new_user.uid, {'admin': True, 'level': 3}, app=fb_app)
    assert auth.get_user(new_user.uid, app=fb_app).custom_claims == {'admin': True, 'level': 3}
    token = sign_in(hearth_server, new_user.email, 'secret-password')['idToken']
    claims = auth.verify_id_token(token, app=fb_app)
    assert claims['admin'] is True
    assert claims['level'] == 3
    auth.set_custom_user_claims(new_user.uid, None, app=fb_app)
    assert auth.get_user(new_user.uid, app=fb_app).custom_claims is None
    with pytest.raises(ValueError):
        auth.set_custom_user_claims(new_user.uid, {'sub': 'root'}, app=fb_app)


def test_list_users_pages_through_every_user(fb_app):
    prefix = unique('list')
    uids = [f'{prefix}-{i}' for i in range(5)]
    for uid in uids:
        auth.create_user(uid=uid, app=fb_app)
    try:
        page = auth.list_users(max_results=2, app=fb_app)
        assert len(page.users) == 2
        assert page.has_next_page
        listed = [user.uid for user in auth.list_users(max_results=2, app=fb_app).iterate_all()]
        assert [uid for uid in listed if uid.startswith(prefix)] == uids
        assert listed == sorted(listed)
    finally:
        result = auth.delete_users(uids, app=fb_app)
        assert result.success_count == 5
        assert result.failure_count == 0
    for uid in uids:
        with pytest.raises(auth.UserNotFoundError):
            auth.get_user(uid, app=fb_app)


def test_verify_id_token_from_a_password_sign_in(fb_app, hearth_server, new_user):
    body = sign_in(hearth_server, new_user.email, 'secret-password')
    assert body['localId'] == new_user.uid
    assert body['expiresIn'] == '3600'
    claims = auth.verify_id_token(body['idToken'], app=fb_app, check_revoked=True)
    assert claims['uid'] == new_user.uid
    assert claims['email'] == new_user.email
    assert claims['iss'] == f'https://securetoken.google.com/{PROJECT_ID}'
    assert claims['aud'] == PROJECT_ID
    assert claims['firebase']['sign_in_provider'] == 'password'
    assert claims['firebase']['identities'] == {'email': [new_user.email]}


def test_wrong_password_and_unknown_email_use_firebases_codes(hearth_server, new_user):
    status, body = rest_call(hearth_server, 'accounts:signInWithPassword',
                             {'email': new_user.email, 'password': 'wrong-password'})
    assert (status, body['error']['message']) == (400, 'INVALID_PASSWORD')
    status, body = rest_call(hearth_server, 'accounts:signInWithPassword',
                             {'email': f'{unique("ghost")}@example.com', 'password': 'whatever1'})
    assert (status, body['error']['message']) == (400, 'EMAIL_NOT_FOUND')
    status, body = rest_call(hearth_server, 'accounts:signUp',
                             {'email': f'{unique("weak")}@example.com', 'password': '123'})
    assert body['error']['message'] == 'WEAK_PASSWORD : Password should be at least 6 characters'


def test_revoked_and_disabled_users_fail_check_revoked(fb_app, hearth_server, new_user):
    token = sign_in(hearth_server, new_user.email, 'secret-password')['idToken']
    # Revocation as revoke_refresh_tokens does it, one second ahead so the token is strictly older.
    auth.update_user(new_user.uid, valid_since=int(time.time()) + 1, app=fb_app)
    with pytest.raises(auth.RevokedIdTokenError):
        auth.verify_id_token(token, app=fb_app, check_revoked=True)
    auth.update_user(new_user.uid, disabled=True, app=fb_app)
    with pytest.raises(auth.UserDisabledError):
        auth.verify_id_token(token, app=fb_app, check_revoked=True)
    status, body = rest_call(hearth_server, 'accounts:signInWithPassword',
                             {'email': new_user.email, 'password': 'secret-password'})
    assert body['error']['message'] == 'USER_DISABLED'


def test_revoke_refresh_tokens_ends_refresh(fb_app, hearth_server, new_user):
    refresh_token = sign_in(hearth_server, new_user.email, 'secret-password')['refreshToken']
    response = requests.post(f'{hearth_server.base_url}/securetoken.googleapis.com/v1/token',
                             params={'key': API_KEY}, timeout=HTTP_TIMEOUT,
                             data={'grant_type': 'refresh_token', 'refresh_token': refresh_token})
    assert response.status_code == 200
    assert response.json()['user_id'] == new_user.uid
    auth.revoke_refresh_tokens(new_user.uid, app=fb_app)
    assert auth.get_user(new_user.uid, app=fb_app).tokens_valid_after_timestamp > 0
    response = requests.post(f'{hearth_server.base_url}/securetoken.googleapis.com/v1/token',
                             params={'key': API_KEY}, timeout=HTTP_TIMEOUT,
                             data={'grant_type': 'refresh_token', 'refresh_token': refresh_token})
    assert response.json()['error']['message'] == 'TOKEN_EXPIRED'


def test_custom_token_signs_in_through_rest(fb_app, hearth_server):
    uid = unique('custom')
    custom_token = auth.create_custom_token(uid, {'premium': True}, app=fb_app)
    status, body = rest_call(hearth_server, 'accounts:signInWithCustomToken',
                             {'token': custom_token.decode(), 'returnSecureToken': True})
    assert status == 200, body
    assert body['isNewUser'] is True
    claims = auth.verify_id_token(body['idToken'], app=fb_app)
    assert claims['uid'] == uid
    assert claims['premium'] is True
    assert claims['firebase']['sign_in_provider'] == 'custom'
    assert auth.get_user(uid, app=fb_app).uid == uid
    auth.delete_user(uid, app=fb_app)


def test_a_signed_in_users_token_passes_database_rules(hearth_server):
    rest = Rest(hearth_server.base_url, 'hearth-auth-rules')
    rules = {'users': {'$uid': {'.read': 'auth.uid === $uid',
                                '.write': "auth.uid === $uid && auth.token.firebase.sign_in_provider === 'password'"}}}
    assert rest.put_rules(rules).status_code == 200
    email = f'{unique("rules")}@example.com'
    status, body = rest_call(hearth_server, 'accounts:signUp',
                             {'email': email, 'password': 'secret-password', 'returnSecureToken': True})
    assert status == 200, body
    uid, token = body['localId'], body['idToken']
    user = Rest(hearth_server.base_url, 'hearth-auth-rules', token=None)
    assert user.put(f'users/{uid}', {'name': 'me'}, params={'auth': token}).status_code == 200
    assert user.get(f'users/{uid}', params={'auth': token}).json() == {'name': 'me'}
    assert user.put(f'users/{unique("other")}', 1, params={'auth': token}).status_code == 401
    assert user.get(f'users/{uid}').status_code == 401


def test_session_cookies_from_an_id_token(fb_app, hearth_server, new_user):
    token = sign_in(hearth_server, new_user.email, 'secret-password')['idToken']
    cookie = auth.create_session_cookie(token, expires_in=datetime.timedelta(days=1), app=fb_app)
    claims = auth.verify_session_cookie(cookie, check_revoked=True, app=fb_app)
    assert claims['uid'] == new_user.uid
    assert claims['iss'] == f'https://session.firebase.google.com/{PROJECT_ID}'
    assert abs(claims['exp'] - (time.time() + 86400)) < 30
    with pytest.raises(auth.InvalidIdTokenError):
        auth.create_session_cookie('not.a.token', expires_in=datetime.timedelta(days=1), app=fb_app)


def test_password_reset_and_verification_links_from_the_admin_work(fb_app, hearth_server, new_user):
    """firebase_admin's generate_*_link calls accounts:sendOobCode with returnOobLink; the code in the
    link resets the password (once) and verifies the email."""
    from urllib.parse import parse_qs, urlparse

    link = auth.generate_password_reset_link(new_user.email, app=fb_app)
    query = parse_qs(urlparse(link).query)
    assert query['mode'] == ['resetPassword']
    code = query['oobCode'][0]
    status, body = rest_call(hearth_server, 'accounts:resetPassword', {'oobCode': code, 'newPassword': 'new-secret-1'})
    assert (status, body['email']) == (200, new_user.email), body
    status, body = rest_call(hearth_server, 'accounts:resetPassword', {'oobCode': code, 'newPassword': 'new-secret-2'})
    assert (status, body['error']['message']) == (400, 'INVALID_OOB_CODE')
    sign_in(hearth_server, new_user.email, 'new-secret-1')

    link = auth.generate_email_verification_link(new_user.email, app=fb_app)
    code = parse_qs(urlparse(link).query)['oobCode'][0]
    status, body = rest_call(hearth_server, 'accounts:update', {'oobCode': code})
    assert (status, body['emailVerified']) == (200, True), body
    assert auth.get_user(new_user.uid, app=fb_app).email_verified


def test_import_users_with_firebase_scrypt_hashes_then_sign_in(fb_app, hearth_server):
    """import_users with Firebase's modified scrypt (the published firebase/scrypt test vector): the
    imported user signs in with its old password; a bad entry is reported by index."""
    import base64

    uid = unique('imported')
    email = f'{uid}@example.com'
    hash_config = auth.UserImportHash.scrypt(
        key=base64.b64decode('jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA=='),
        salt_separator=base64.b64decode('Bw=='), rounds=8, memory_cost=14)
    users = [
        auth.ImportUserRecord(uid=uid, email=email, display_name='Imported',
                              password_hash=base64.b64decode(
                                  'lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=='),
                              password_salt=base64.b64decode('42xEC+ixf3L2lw==')),
        auth.ImportUserRecord(uid=uid, email=f'other-{email}'),
    ]
    result = auth.import_users(users, hash_alg=hash_config, app=fb_app)
    assert (result.success_count, result.failure_count) == (1, 1)
    assert [error.index for error in result.errors] == [1]
    try:
        body = sign_in(hearth_server, email, 'user1password')
        assert body['localId'] == uid
        status, body = rest_call(hearth_server, 'accounts:signInWithPassword', {'email': email, 'password': 'wrong-password'})
        assert status == 400
        assert auth.get_user(uid, app=fb_app).display_name == 'Imported'
    finally:
        auth.delete_user(uid, app=fb_app)
