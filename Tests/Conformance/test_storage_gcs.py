"""google-cloud-storage (the Python client firebase_admin.storage wraps) against hearth's files.

The client talks to hearth through STORAGE_EMULATOR_HOST, as it would to the Storage emulator,
and verifies every download's MD5/CRC32C itself, so a wrong byte or checksum fails these tests.
"""

import hashlib
import io
import os
import uuid

import pytest
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage

from harness import PROJECT_ID

BUCKET = f'{PROJECT_ID}.appspot.com'


@pytest.fixture(scope='module')
def bucket(hearth_server):
    saved = os.environ.get('STORAGE_EMULATOR_HOST')
    os.environ['STORAGE_EMULATOR_HOST'] = hearth_server.base_url
    client = storage.Client(project=PROJECT_ID, credentials=AnonymousCredentials())
    yield client.bucket(BUCKET)
    if saved is None:
        os.environ.pop('STORAGE_EMULATOR_HOST', None)
    else:
        os.environ['STORAGE_EMULATOR_HOST'] = saved


@pytest.fixture
def folder():
    return f'gcs-{uuid.uuid4().hex[:8]}'


def test_upload_download_and_metadata(bucket, folder):
    blob = bucket.blob(f'{folder}/hello.txt')
    blob.metadata = {'owner': 'ada'}
    blob.upload_from_string('hello, hearth', content_type='text/plain')
    assert blob.size == 13
    assert blob.md5_hash == __import__('base64').b64encode(hashlib.md5(b'hello, hearth').digest()).decode()
    fetched = bucket.get_blob(f'{folder}/hello.txt')
    assert fetched.content_type == 'text/plain'
    assert fetched.metadata == {'owner': 'ada'}
    assert fetched.md5_hash == blob.md5_hash
    assert fetched.download_as_bytes() == b'hello, hearth'
    assert fetched.download_as_text() == 'hello, hearth'


def test_ranges(bucket, folder):
    data = bytes(range(256)) * 40
    blob = bucket.blob(f'{folder}/range.bin')
    blob.upload_from_string(data)
    assert blob.download_as_bytes(start=10, end=19) == data[10:20]
    assert blob.download_as_bytes(start=10000) == data[10000:]


def test_list_with_prefixes(bucket, folder):
    for name in ['a.txt', 'b.txt', 'sub/c.txt', 'sub/deeper/d.txt', 'other/e.txt']:
        bucket.blob(f'{folder}/{name}').upload_from_string(name)
    iterator = bucket.list_blobs(prefix=f'{folder}/', delimiter='/')
    names = [blob.name for blob in iterator]
    assert names == [f'{folder}/a.txt', f'{folder}/b.txt']
    assert sorted(iterator.prefixes) == [f'{folder}/other/', f'{folder}/sub/']
    everything = [blob.name for blob in bucket.list_blobs(prefix=f'{folder}/')]
    assert len(everything) == 5
    paged = [blob.name for blob in bucket.list_blobs(prefix=f'{folder}/', max_results=100, page_size=2)]
    assert paged == sorted(everything)


def test_patch_metadata(bucket, folder):
    blob = bucket.blob(f'{folder}/patch.txt')
    blob.upload_from_string('x', content_type='text/plain')
    blob.metadata = {'firebaseStorageDownloadTokens': 'tok-123', 'k': 'v'}
    blob.cache_control = 'public, max-age=60'
    blob.patch()
    fetched = bucket.get_blob(f'{folder}/patch.txt')
    assert fetched.metadata == {'firebaseStorageDownloadTokens': 'tok-123', 'k': 'v'}
    assert fetched.cache_control == 'public, max-age=60'
    assert int(fetched.metageneration) == 2


def test_delete_then_not_found(bucket, folder):
    blob = bucket.blob(f'{folder}/gone.txt')
    blob.upload_from_string('bye')
    blob.delete()
    assert bucket.get_blob(f'{folder}/gone.txt') is None
    with pytest.raises(exceptions.NotFound):
        blob.download_as_bytes()
    with pytest.raises(exceptions.NotFound):
        blob.delete()


def test_resumable_upload_of_several_megabytes(bucket, folder):
    data = os.urandom(5 * 1024 * 1024 + 123)
    blob = bucket.blob(f'{folder}/big.bin', chunk_size=1024 * 1024)
    blob.upload_from_file(io.BytesIO(data), size=len(data), content_type='application/octet-stream')
    fetched = bucket.get_blob(f'{folder}/big.bin')
    assert fetched.size == len(data)
    downloaded = fetched.download_as_bytes()
    assert hashlib.sha256(downloaded).digest() == hashlib.sha256(data).digest()


def test_copy(bucket, folder):
    source = bucket.blob(f'{folder}/original.txt')
    source.upload_from_string('copy me')
    copied = bucket.copy_blob(source, bucket, f'{folder}/copied.txt')
    assert copied.download_as_bytes() == b'copy me'
    source.delete()
    assert bucket.blob(f'{folder}/copied.txt').download_as_bytes() == b'copy me'


def test_create_only_uploads_never_overwrite(bucket, folder):
    # `if_generation_match=0`: the create-if-absent that locks and immutable objects are built on.
    blob = bucket.blob(f'{folder}/lock')
    blob.upload_from_string('first', if_generation_match=0)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob(f'{folder}/lock').upload_from_string('second', if_generation_match=0)
    # The same through a resumable upload (chunked: the condition travels with the session).
    data = os.urandom(3 * 1024 * 1024)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob(f'{folder}/lock', chunk_size=1024 * 1024).upload_from_file(
            io.BytesIO(data), size=len(data), if_generation_match=0)
    assert bucket.get_blob(f'{folder}/lock').download_as_bytes() == b'first'
    # Replacing the version one read works once; the second writer from that version is refused.
    generation = blob.generation
    bucket.blob(f'{folder}/lock').upload_from_string('second', if_generation_match=generation)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob(f'{folder}/lock').upload_from_string('third', if_generation_match=generation)
    assert bucket.get_blob(f'{folder}/lock').download_as_bytes() == b'second'


def test_conditional_reads_patches_and_deletes(bucket, folder):
    blob = bucket.blob(f'{folder}/cond.txt')
    blob.upload_from_string('hello', content_type='text/plain')
    with pytest.raises(exceptions.NotModified):
        blob.download_as_bytes(if_generation_not_match=blob.generation)
    assert blob.download_as_bytes(if_generation_match=blob.generation) == b'hello'
    with pytest.raises(exceptions.PreconditionFailed):
        blob.reload(if_metageneration_match=blob.metageneration + 1)
    blob.metadata = {'k': 'v'}
    with pytest.raises(exceptions.PreconditionFailed):
        blob.patch(if_metageneration_match=blob.metageneration + 1)
    blob.patch(if_metageneration_match=blob.metageneration)
    assert blob.metageneration == 2
    with pytest.raises(exceptions.PreconditionFailed):
        blob.delete(if_generation_match=blob.generation + 1)
    assert bucket.get_blob(f'{folder}/cond.txt') is not None
    blob.delete(if_generation_match=blob.generation, if_metageneration_match=2)
    assert bucket.get_blob(f'{folder}/cond.txt') is None
