"""Datasets and content-addressed objects without a cluster (docs/datasets.md): the keys of objects and datasets,
the manifest digest, ListDatasets' and ListDatasetFiles' tokens, a run's input manifest, which objects a deletion
collects, the run book's restore passing over the datasets' keys in the bucket, and a dataset's release (who reads
its reference, what a sealed reader is shown, ReleaseDataset recorded and read back).

The object store and NATS' key-value bucket are small in-memory doubles here; tests/integration/test_datasets.py has
the real ones.
"""

from __future__ import annotations

import asyncio
import hashlib
import subprocess

import grpc
import pytest

from mfscore.services.aggregator import paging
from mfscore.services.aggregator.dataset_api import DatasetApi
from mfscore.services.aggregator.datasets import (
    DatasetBook,
    is_run_of,
    kv_key,
    manifest_sha256,
    may_read_reference,
    naming_refusal,
    release_of,
    released,
    sealed_view,
)
from mfscore.services.aggregator.objects import Objects, space_of_key
from mfscore.services.aggregator.quotas import Quotas
from mfscore.services.aggregator.run import Run
from mfscore.services.aggregator.state import RunBook, State, spec_key, status_key
from mfscore.services.common import auth, input_manifest
from mfscore.services.common.auth import Caller
from mfscore.services.common.object_store import ObjectMissing
from mfscore.services.common.run_layout import (
    BadName,
    check_dataset,
    check_object_key,
    dataset_files_key,
    namespace,
    object_key,
    parse_dataset,
    uploads_prefix,
)
from mfscore.services.common.settings import Settings
from mfscore.services.wire import datasets_pb2, runs_pb2

SHA = hashlib.sha256(b"x").hexdigest()
HOSTILE = ["\n", "\r", "\0", "\x1b", "\x7f", "/", "\\", " ", "@", "*", ">"]

# ----------------------------------------------------------------------------------------- keys


def test_an_object_is_keyed_by_its_owners_namespace_and_its_digest():
    space = namespace("client", "alice-2.team_b")
    assert space == "client/alice-2.team_b"
    assert object_key(space, SHA) == f"objects/client/alice-2.team_b/{SHA}"
    assert check_object_key(object_key(space, SHA)) == object_key(space, SHA)
    assert space_of_key(object_key(space, SHA)) == space


@pytest.mark.parametrize("name", ["", ".", "..", ".alice", "alice.", "a..b", "-a", "a" * 65,
                                  *(f"al{c}ice" for c in HOSTILE)])
def test_a_caller_name_that_cannot_be_a_namespace_is_refused(name):
    with pytest.raises(BadName, match="cannot name a namespace of objects"):
        namespace("client", name)


@pytest.mark.parametrize("key", ["objects/client/alice", f"objects/client/alice/{SHA}/x", f"runs/client/alice/{SHA}",
                                 f"objects/client/../{SHA}", f"objects/client/alice/{SHA.upper()}",
                                 f"objects/client/alice/{SHA[:-1]}", f"objects//alice/{SHA}", f"/objects/c/a/{SHA}",
                                 f"objects/client/a\nb/{SHA}", "runs/r1/inputs/ref/x.csv"])
def test_anything_else_is_no_object_key(key):
    with pytest.raises(BadName, match="is not an object key"):
        check_object_key(key)


def test_a_digest_that_is_not_one_is_no_object():
    with pytest.raises(BadName, match="64 lowercase hexadecimal"):
        object_key("client/alice", "../../runs/x")


@pytest.mark.parametrize("reference, parts", [("mfc18@1", ("mfc18", "1")), ("nimble.dev@20", ("nimble.dev", "20")),
                                              ("a_b-c@1", ("a_b-c", "1")), ("alice/masks@3", ("alice/masks", "3"))])
def test_a_dataset_is_name_at_version(reference, parts):
    assert parse_dataset(reference) == parts
    assert check_dataset(*parts) == reference
    assert dataset_files_key(*parts) == f"datasets/{reference}/files.pb"
    assert kv_key(*parts) == f"dataset.{parts[0]}={parts[1]}"  # '=' is a key character no name holds


@pytest.mark.parametrize("reference", ["mfc18", "@1", "mfc18@", "a@b@c", "../x@1", "x@..", "x@1.", "x@.1",
                                       *(f"mf{c}c@1" for c in HOSTILE if c not in "@/"), "a" * 65 + "@1",
                                       "a/b/c@1", "/x@1", "x/@1", "x@v1", "x@0", "x@-1", "x@1e3", "x@" + "9" * 10])
def test_any_other_dataset_name_is_refused(reference):
    with pytest.raises(BadName):
        parse_dataset(reference)


@pytest.mark.parametrize("reference, said", [
    ("EVAL@1", "is not 1-64 lowercase letters, digits, '.', '_' or '-' starting with a letter or digit, optionally "
               "after its owner's name and '/' (write 'eval')"),
    ("Alice/Masks@1", "(write 'alice/masks')"),
    ("eval@1.0", "the dataset version '1.0' is not a positive whole number without leading zeros (1, 2, 3, ...)"),
    ("eval@01", "the dataset version '01' is not a positive whole number without leading zeros"),
])
def test_a_name_has_one_spelling_nothing_is_folded(reference, said):
    """Issue 41 (3): EVAL@1, eval@1.0 and eval@01 were datasets beside eval@1. Refused, with the spelling to use."""
    with pytest.raises(BadName) as refused:
        parse_dataset(reference)
    assert said in refused.value.sentence()


OPERATOR, ALICE = Caller("operator", "operator"), Caller("alice", "client")


@pytest.mark.parametrize("who, name, refusal", [
    (OPERATOR, "eval", None),
    (OPERATOR, "alice/eval", "the dataset name 'alice/eval' is a client's (it starts with alice/); an operator's "
                             "dataset names have no owner part"),
    (ALICE, "alice/eval", None),
    (ALICE, "eval", "the dataset name 'eval' is not yours: a client's datasets are named after it, alice/eval"),
    (ALICE, "bob/eval", "the dataset name 'bob/eval' is not yours: a client's datasets are named after it, alice/eval"),
])
def test_a_client_names_datasets_in_its_own_namespace_and_the_operator_outside_every_one(who, name, refusal):
    """Issue 41 (3): a client took eval@2 before the operator registered it."""
    assert naming_refusal(who, name) == refusal


def test_a_run_of_a_deleted_dataset_is_no_run_of_one_registered_again_under_its_name():
    """Issue 41 (3): runs name a dataset's creation, not only its name."""
    first = datasets_pb2.Dataset(name="alice/tmp", version="1", creation_id="c1")
    again = datasets_pb2.Dataset(name="alice/tmp", version="1", creation_id="c2")
    spec = runs_pb2.RunSpec(run_id="r1", dataset="alice/tmp@1", dataset_creation_id="c1")
    assert is_run_of(spec, first) and not is_run_of(spec, again)
    assert not is_run_of(runs_pb2.RunSpec(dataset="alice/tmp@2", dataset_creation_id="c1"), first)


def test_the_sweep_keeps_a_clients_datasets_and_deletes_a_list_of_files_no_dataset_names():
    store, kv = FakeStore(), FakeKv()
    datasets = DatasetBook(kv, store)
    files = [declared("ref.png", b"ref.png")]
    for name in ("alice/masks", "eval"):
        asyncio.run(datasets.add(datasets_pb2.Dataset(name=name, version="1", manifest_sha256=manifest_sha256(files),
                                                      file_count=1), files))
    stray = dataset_files_key("alice/gone", "1")
    store.put_bytes(stray, b"a CreateDataset that could not record its description")
    assert asyncio.run(datasets.sweep(written_before=store.clock + 1)) == 1
    assert sorted(store.objects) == ["datasets/alice/masks@1/files.pb", "datasets/eval@1/files.pb"]


def test_two_datasets_never_share_a_bucket_key():
    assert kv_key("a1", "2") != kv_key("a", "12") and kv_key("a/b", "1") != kv_key("a", "1")


# ----------------------------------------------------------------------------------------- manifest digest


def declared(name: str, content: bytes) -> runs_pb2.DeclaredFile:
    return runs_pb2.DeclaredFile(name=name, size=len(content), sha256=hashlib.sha256(content).hexdigest())


def test_the_manifest_digest_is_sha256sums_output_in_name_order_hashed(tmp_path):
    files = {"reference/b.csv": b"b|1\n", "a.csv": b"a\n", "mask/ü.png": b"\x89PNG"}
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    listed = subprocess.run(["sha256sum", *sorted(files)], cwd=tmp_path, capture_output=True, check=True).stdout
    shuffled = [declared(name, content) for name, content in reversed(list(files.items()))]
    assert manifest_sha256(shuffled) == hashlib.sha256(listed).hexdigest()


def test_the_manifest_digest_changes_with_any_name_or_content():
    base = [declared("a.csv", b"a"), declared("b.csv", b"b")]
    assert len({manifest_sha256(base), manifest_sha256([declared("a.csv", b"A"), base[1]]),
                manifest_sha256([declared("c.csv", b"a"), base[1]]), manifest_sha256(base[:1])}) == 4


# ----------------------------------------------------------------------------------------- pages


def test_a_datasets_token_round_trips_and_is_not_a_runs_token():
    place = (1_700_000_000_123_456_789, "mfc18@1")
    token = paging.page_token(0, place, paging.DATASETS)
    assert paging.read_page_token(token, 0, paging.DATASETS) == place
    clients = (1_700_000_000_123_456_789, "alice/masks@1")  # a page may end on a client's dataset
    assert paging.read_page_token(paging.page_token(0, clients, paging.DATASETS), 0, paging.DATASETS) == clients
    with pytest.raises(paging.BadPageToken, match="not a token ListRuns gave"):
        paging.read_page_token(token, 0)
    with pytest.raises(paging.BadPageToken, match="not a token ListDatasets gave"):
        paging.read_page_token(paging.page_token(0, (5, "a" * 32)), 0, paging.DATASETS)


def test_a_files_token_is_bound_to_its_dataset():
    token = paging.files_token("ab" * 32, 2000)
    assert paging.read_files_token(token, "ab" * 32) == 2000 and paging.read_files_token("", "ab" * 32) == 0
    for bad, dataset in ((token, "cd" * 32), (paging.page_token(0, (5, "run")), "ab" * 32), ("%%", "ab" * 32)):
        with pytest.raises(paging.BadPageToken, match="not a token ListDatasetFiles gave for this dataset"):
            paging.read_files_token(bad, dataset)


def test_a_files_page_has_its_own_size_limits():
    assert paging.page_size(0, 1000, 10000) == 1000 and paging.page_size(50000, 1000, 10000) == 10000


# ----------------------------------------------------------------------------------------- doubles


class FakeStore:
    """Objects by key, with when each was written; ``list_keys``, ``get_bytes``, ``put_bytes``, ``size_of``,
    ``sizes_under``, ``list_objects``, ``delete_keys``, ``delete_prefix``, ``folders``."""

    def __init__(self):
        self.objects: dict[str, bytes] = {}
        self.written: dict[str, float] = {}
        self.clock = 1000.0

    def put_bytes(self, key, data):
        self.clock += 1
        self.objects[key], self.written[key] = data, self.clock

    def get_bytes(self, key, max_bytes):
        if key not in self.objects:
            raise ObjectMissing(key)
        return self.objects[key]

    def list_keys(self, prefix):
        return sorted(key for key in self.objects if key.startswith(prefix))

    def size_of(self, key):
        return len(self.objects[key]) if key in self.objects else None

    def list_objects(self, prefix):
        return [(key, len(self.objects[key]), self.written[key]) for key in self.list_keys(prefix)]

    def sizes_under(self, prefix, limit):
        keys = self.list_keys(prefix)
        return None if len(keys) > limit else {key: len(self.objects[key]) for key in keys}

    def delete_keys(self, keys):
        for key in keys:
            self.objects.pop(key, None)
        return len(keys)

    def delete_prefix(self, prefix, written_before=None):
        return self.delete_keys(self.list_keys(prefix))

    def folders(self, prefix):
        return sorted({prefix + key[len(prefix):].split("/", 1)[0] + "/" for key in self.list_keys(prefix)
                       if "/" in key[len(prefix):]})


class Entry:
    def __init__(self, value: bytes):
        self.value = value


class FakeKv:
    def __init__(self):
        self.data: dict[str, bytes] = {}

    async def put(self, key, value):
        self.data[key] = value

    async def get(self, key):
        return Entry(self.data[key])

    async def purge(self, key):
        self.data.pop(key, None)

    async def keys(self, filters=None):
        prefixes = [f[:-1] for f in filters or [">"]]
        return [key for key in self.data if any(key.startswith(p) for p in prefixes)]


def record(store: FakeStore, run_id: str, *files: tuple[str, bytes, str]) -> None:
    input_manifest.write(store, run_id, [runs_pb2.InputFile(name=name, size=len(content),
                                                            sha256=hashlib.sha256(content).hexdigest(),
                                                            key=object_key(space, hashlib.sha256(content).hexdigest()))
                                         for name, content, space in files])


# ----------------------------------------------------------------------------------------- input manifest


def test_a_later_record_of_a_name_wins_and_an_old_record_names_the_runs_prefix():
    store = FakeStore()
    old = runs_pb2.UploadInputsResponse(files=[declared("ref/r.csv", b"old"), declared("sys/s.csv", b"s")])
    store.put_bytes(uploads_prefix("r1") + "00000000000000000001-aaaa.pb", old.SerializeToString())
    record(store, "r1", ("ref/r.csv", b"new", "client/alice"))
    inputs = input_manifest.read(store, "r1")
    assert inputs["ref/r.csv"].key == object_key("client/alice", hashlib.sha256(b"new").hexdigest())
    assert inputs["sys/s.csv"].key == "runs/r1/inputs/sys/s.csv"
    assert input_manifest.digests(inputs) == {"ref/r.csv": hashlib.sha256(b"new").hexdigest(),
                                              "sys/s.csv": hashlib.sha256(b"s").hexdigest()}
    assert input_manifest.stored_key("runs/r1/inputs/", inputs, "planned/x") == "runs/r1/inputs/planned/x"
    only_objects = input_manifest.objects_for(inputs, ["/w/ref/r.csv", "/w/sys/s.csv", "", "planned/x"], "/w")
    assert only_objects == {"ref/r.csv": inputs["ref/r.csv"].key}  # a job carries objects only


# ----------------------------------------------------------------------------------------- collection


def run_entry(run_id: str, owner: str, dataset: str = "", state=State.RUN_STATE_DONE) -> Run:
    return Run(runs_pb2.RunSpec(run_id=run_id, dataset=dataset),
               runs_pb2.RunStatus(run_id=run_id, owner=owner, owner_role="client", state=state))


def world():
    """alice's runs r1 and r2 share the object of a.png; operator's shared dataset d@1 holds ref.png, which bob's run
    r3 reads through it."""
    store, kv = FakeStore(), FakeKv()
    book, datasets = RunBook(kv), DatasetBook(kv, store)
    objects = Objects(store, book, datasets)
    alice, bob, operator = "client/alice", "client/bob", "operator/operator"
    for space, content in ((alice, b"a.png"), (alice, b"b.png"), (alice, b"c.png"), (bob, b"s.png"),
                           (operator, b"ref.png")):
        store.put_bytes(object_key(space, hashlib.sha256(content).hexdigest()), content)
    record(store, "r1", ("sys/a.png", b"a.png", alice), ("sys/b.png", b"b.png", alice))
    record(store, "r2", ("sys/a.png", b"a.png", alice), ("sys/c.png", b"c.png", alice))
    record(store, "r3", ("sys/s.png", b"s.png", bob), ("ref/ref.png", b"ref.png", operator))
    book.runs = {"r1": run_entry("r1", "alice"), "r2": run_entry("r2", "alice"),
                 "r3": run_entry("r3", "bob", dataset="d@1")}
    dataset = datasets_pb2.Dataset(name="d", version="1", owner="operator", owner_role="operator", shared=True,
                                   manifest_sha256=manifest_sha256([declared("ref.png", b"ref.png")]), file_count=1)
    asyncio.run(datasets.add(dataset, [declared("ref.png", b"ref.png")]))
    return store, book, datasets, objects


def key(space: str, content: bytes) -> str:
    return object_key(space, hashlib.sha256(content).hexdigest())


def test_a_deleted_runs_objects_go_unless_another_run_names_them():
    store, book, _, objects = world()
    named = input_manifest.keys(input_manifest.read(store, "r1"))
    del book.runs["r1"]
    assert asyncio.run(objects.collect(named)) == 1
    assert key("client/alice", b"b.png") not in store.objects  # r1's alone
    assert key("client/alice", b"a.png") in store.objects      # r2 names it too


def test_a_dataset_and_a_run_naming_it_keep_the_object_until_neither_does():
    store, book, datasets, objects = world()
    ref = key("operator/operator", b"ref.png")
    del book.runs["r3"]  # bob's run is gone: the dataset still names ref.png
    assert asyncio.run(objects.collect({ref})) == 0 and ref in store.objects
    book.runs["r3"] = run_entry("r3", "bob", dataset="d@1")
    dataset = datasets.datasets["d@1"]
    asyncio.run(datasets.remove(dataset))  # the dataset is gone: bob's run still names its object
    assert asyncio.run(objects.collect({ref})) == 0 and ref in store.objects
    del book.runs["r3"]
    assert asyncio.run(objects.collect({ref})) == 1 and ref not in store.objects


def test_a_pinned_object_is_never_collected():
    store, book, _, objects = world()
    doomed = key("client/alice", b"c.png")
    del book.runs["r2"]
    with objects.pinning() as pin:
        pin(doomed)
        assert asyncio.run(objects.collect({doomed})) == 0
    assert asyncio.run(objects.collect({doomed})) == 1


def test_the_sweep_deletes_only_what_nothing_names_once_a_day_old():
    store, book, _, objects = world()
    stray = key("client/carol", b"never named")
    store.put_bytes(stray, b"never named")
    assert asyncio.run(objects.sweep(now=store.clock)) == 0  # written just now: an upload may be under way
    assert asyncio.run(objects.sweep(now=store.clock + 2 * 86400)) == 1
    assert stray not in store.objects and len([k for k in store.objects if k.startswith("objects/")]) == 5


def test_objects_held_are_found_in_the_callers_namespace_only_and_with_their_size():
    store, _, _, objects = world()
    digest = hashlib.sha256(b"a.png").hexdigest()
    assert objects.held("client/alice", {digest: 5}) == {digest}
    assert objects.held("client/alice", {digest: 6}) == set()
    assert objects.held("client/bob", {digest: 5}) == set()  # alice's bytes are not bob's


# ----------------------------------------------------------------------------------------- the bucket


def test_the_run_book_and_the_datasets_read_back_their_own_keys_from_one_bucket():
    kv = FakeKv()
    spec, status = runs_pb2.RunSpec(run_id="r1"), runs_pb2.RunStatus(run_id="r1", state=State.RUN_STATE_DONE)
    kv.data = {spec_key("r1"): spec.SerializeToString(), status_key("r1"): status.SerializeToString()}
    dataset = datasets_pb2.Dataset(name="d", version="1", owner="operator", owner_role="operator")
    kv.data[kv_key("d", "1")] = dataset.SerializeToString()
    book, datasets = RunBook(kv), DatasetBook(kv, FakeStore())

    async def restore():
        await datasets.restore()
        return await book.restore()

    assert asyncio.run(restore()) == []
    assert list(book.runs) == ["r1"] and not book.abandoned and list(datasets.datasets) == ["d@1"]


# ----------------------------------------------------------------------------------------- release

AGGREGATE, PER_TRIAL, OPEN = (datasets_pb2.DATASET_RELEASE_AGGREGATE, datasets_pb2.DATASET_RELEASE_PER_TRIAL,
                              datasets_pb2.DATASET_RELEASE_OPEN)
UNSPECIFIED = datasets_pb2.DATASET_RELEASE_UNSPECIFIED
BOB = Caller("bob", "client")
REF = [declared("reference/r.csv", b"ref"), declared("mask/m.png", b"mask")]


def shared_dataset(release: int = AGGREGATE) -> datasets_pb2.Dataset:
    return datasets_pb2.Dataset(name="eval", version="1", owner="operator", owner_role="operator", shared=True,
                                manifest_sha256=manifest_sha256(REF), file_count=len(REF),
                                total_bytes=sum(f.size for f in REF), release=release)


def alices(release: int = OPEN) -> datasets_pb2.Dataset:
    return datasets_pb2.Dataset(name="alice/masks", version="1", owner="alice", owner_role="client",
                                manifest_sha256=manifest_sha256(REF), file_count=len(REF), total_bytes=7,
                                release=release)


@pytest.mark.parametrize("release, effective", [(UNSPECIFIED, OPEN), (AGGREGATE, AGGREGATE), (PER_TRIAL, PER_TRIAL),
                                                (OPEN, OPEN)])
def test_a_dataset_recorded_before_releases_were_is_open(release, effective):
    assert release_of(shared_dataset(release)) == effective


@pytest.mark.parametrize("who, dataset, reads", [
    (OPERATOR, shared_dataset(AGGREGATE), True),      # the owner
    (OPERATOR, alices(), True),               # an operator reads every reference
    (ALICE, alices(), True),                  # the owner
    (ALICE, alices(AGGREGATE), True),         # its owner whatever the release
    (BOB, alices(), False),                   # another's private dataset: not even readable
    (BOB, shared_dataset(AGGREGATE), False),
    (BOB, shared_dataset(PER_TRIAL), False),
    (BOB, shared_dataset(OPEN), True),
    (BOB, shared_dataset(UNSPECIFIED), True),         # recorded before: open
    (Caller("operator", "client"), shared_dataset(AGGREGATE), False),  # its owner's name, another role
])
def test_the_reference_is_read_by_its_owner_an_operator_or_anyone_who_reads_an_open_dataset(who, dataset, reads):
    assert may_read_reference(who, dataset) is reads


def test_a_sealed_reader_sees_no_digest_count_or_size_and_the_dataset_is_left_as_it_was():
    dataset = shared_dataset(AGGREGATE)
    dataset.created_at.FromSeconds(1_700_000_000)
    view = sealed_view(dataset, BOB)
    assert (view.manifest_sha256, view.file_count, view.total_bytes) == ("", 0, 0)
    assert dataset.manifest_sha256 not in view.SerializeToString().decode("latin-1")
    assert (view.name, view.owner, view.shared, view.release, view.created_at) == (
        dataset.name, dataset.owner, True, AGGREGATE, dataset.created_at)
    assert dataset.manifest_sha256 == manifest_sha256(REF) and dataset.file_count == 2  # not changed in place
    assert sealed_view(dataset, OPERATOR) is dataset and sealed_view(shared_dataset(OPEN), BOB).file_count == 2


def test_released_is_whether_released_at_is_set():
    dataset = shared_dataset()
    assert not released(dataset)
    dataset.released_at.FromSeconds(1_700_000_000)
    assert released(dataset)


def api() -> tuple[DatasetApi, FakeKv, FakeStore]:
    """A DatasetApi over the in-memory doubles, the operator's objects of REF stored."""
    store, kv = FakeStore(), FakeKv()
    book, datasets = RunBook(kv), DatasetBook(kv, store)
    for file, content in zip(REF, (b"ref", b"mask")):
        store.put_bytes(object_key("operator/operator", file.sha256), content)
        store.put_bytes(object_key("client/alice", file.sha256), content)
    settings = Settings()
    return DatasetApi(settings, store, book, datasets, Objects(store, book, datasets), Quotas(settings)), kv, store


class Aborted(Exception):
    pass


class Context:
    """What a handler is given; ``abort`` raises as gRPC's does, keeping the code and sentence."""

    async def abort(self, code, details):
        self.code, self.details = code, details
        raise Aborted


def call(who: Caller, method, request):
    """``method(request)`` as ``who``: its answer, or the Context it aborted with."""
    async def as_caller():
        auth._caller.set(who)
        context = Context()
        try:
            return await method(request, context)
        except Aborted:
            return context

    return asyncio.run(as_caller())


def create(service: DatasetApi, who: Caller, name: str, *, shared: bool = False, release: int = UNSPECIFIED):
    async def requests():
        yield datasets_pb2.CreateDatasetRequest(name=name, version="1", shared=shared, files=REF, release=release)

    return call(who, lambda request, context: service.CreateDataset(requests(), context), None)


@pytest.mark.parametrize("shared, release, stored", [(True, UNSPECIFIED, AGGREGATE), (True, PER_TRIAL, PER_TRIAL),
                                                     (True, OPEN, OPEN), (False, UNSPECIFIED, OPEN),
                                                     (False, OPEN, OPEN)])
def test_create_dataset_stores_the_effective_release(shared, release, stored):
    service, kv, _ = api()
    created = create(service, OPERATOR, "eval", shared=shared, release=release)
    assert created.created and created.dataset.release == stored
    assert datasets_pb2.Dataset.FromString(kv.data[kv_key("eval", "1")]).release == stored


@pytest.mark.parametrize("release", [AGGREGATE, PER_TRIAL, 7])
def test_a_private_dataset_asked_a_sealed_release_is_invalid(release):
    service, kv, _ = api()
    refused = create(service, ALICE, "alice/masks", release=release)
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT and "alice/masks@1" in refused.details
    assert kv.data == {}


def test_the_same_dataset_again_with_another_effective_release_already_exists():
    service, _, _ = api()
    assert create(service, OPERATOR, "eval", shared=True).created
    again = create(service, OPERATOR, "eval", shared=True, release=AGGREGATE)  # the default, said
    assert not again.created and again.dataset.release == AGGREGATE
    refused = create(service, OPERATOR, "eval", shared=True, release=OPEN)
    assert refused.code == grpc.StatusCode.ALREADY_EXISTS and "release" in refused.details


def test_a_client_reads_a_sealed_dataset_but_not_its_reference():
    service, _, _ = api()
    create(service, OPERATOR, "eval", shared=True)
    get = datasets_pb2.GetDatasetRequest(name="eval", version="1")
    seen = call(BOB, service.GetDataset, get).dataset
    assert seen.release == AGGREGATE and not seen.manifest_sha256 and not seen.file_count and not seen.total_bytes
    listed = call(BOB, service.ListDatasets, datasets_pb2.ListDatasetsRequest()).datasets
    assert [d.name for d in listed] == ["eval"] and not listed[0].manifest_sha256
    refused = call(BOB, service.ListDatasetFiles, datasets_pb2.ListDatasetFilesRequest(name="eval", version="1"))
    assert refused.code == grpc.StatusCode.PERMISSION_DENIED
    assert refused.details == ("the reference of eval@1 is sealed: its owner releases aggregate results only; submit "
                               "a package (mfscore submit --dataset eval@1 --package DIR)")
    assert call(OPERATOR, service.GetDataset, get).dataset.manifest_sha256 == manifest_sha256(REF)
    files = call(OPERATOR, service.ListDatasetFiles, datasets_pb2.ListDatasetFilesRequest(name="eval", version="1"))
    assert [f.name for f in files.files] == sorted(f.name for f in REF)


def test_release_dataset_is_its_owners_or_an_operators_once_and_survives_a_restore():
    service, kv, store = api()
    create(service, OPERATOR, "eval", shared=True)
    create(service, ALICE, "alice/masks")
    request = datasets_pb2.ReleaseDatasetRequest(name="eval", version="1")
    denied = call(BOB, service.ReleaseDataset, request)
    assert denied.code == grpc.StatusCode.PERMISSION_DENIED and "only its owner or an operator" in denied.details
    unknown = call(BOB, service.ReleaseDataset, datasets_pb2.ReleaseDatasetRequest(name="alice/masks", version="1"))
    assert unknown.code == grpc.StatusCode.NOT_FOUND  # as a dataset that never was
    first = call(OPERATOR, service.ReleaseDataset, request).dataset
    assert released(first) and first.manifest_sha256 == manifest_sha256(REF)
    again = call(OPERATOR, service.ReleaseDataset, request).dataset
    assert again.released_at == first.released_at
    assert released(call(ALICE, service.ReleaseDataset, datasets_pb2.ReleaseDatasetRequest(
        name="alice/masks", version="1")).dataset)

    restarted = DatasetBook(kv, store)
    asyncio.run(restarted.restore())
    assert restarted.datasets["eval@1"] == first and released(restarted.datasets["alice/masks@1"])
    standby = DatasetBook(FakeKv(), store)
    standby.take_change(kv_key("eval", "1"), kv.data[kv_key("eval", "1")])
    assert standby.datasets["eval@1"].released_at == first.released_at
    assert asyncio.run(restarted.files(restarted.datasets["eval@1"])) == sorted(REF, key=lambda f: f.name)


def test_a_dataset_being_released_is_not_deleted_meanwhile():
    service, _, _ = api()
    create(service, OPERATOR, "eval", shared=True)
    service.datasets.creating.add("eval@1")  # a ReleaseDataset writing its description
    refused = call(OPERATOR, service.DeleteDataset, datasets_pb2.DeleteDatasetRequest(name="eval", version="1"))
    assert refused.code == grpc.StatusCode.UNAVAILABLE and "eval@1" in service.datasets.datasets
