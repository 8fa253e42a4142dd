"""Which adapter a Device takes: an explicit identity, and the GPU a scheduler assigned.

``vn_adapter_choose`` is a pure function of an adapter list and the environment, so it
is tested here on made-up lists of several GPUs (this machine has one adapter); the
Device tests run it on the real list.
"""

from __future__ import annotations

import multiprocessing
import shutil
import subprocess
from typing import Any

import pytest
from support.errors import typed

import vyre_native as vn
from vyre_native._lib import check, ffi, lib

VARIABLES = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK")
NV, AMD, MESA = 0x10DE, 0x1002, 0x10005

# Two H200s listed out of PCI order, an AMD GPU and lavapipe.
FAKE = [
    ("NVIDIA H200", NV, "0000:9b:00.0", "8932f937-d72c-4106-c12f-20bd9faed9f6"),
    ("NVIDIA H200", NV, "0000:1b:00.0", "1a2b3c4d-0000-1111-2222-333344445555"),
    ("AMD Radeon", AMD, "0000:05:00.0", "00000000-0000-0000-0000-0000000000aa"),
    ("llvmpipe", MESA, "", "6d657361-3232-2e33-2e36-000000000000"),
]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def choose(adapters: list[tuple[str, int, str, str]] = FAKE, wanted: str | None = None) -> int:
    infos = ffi.new("vn_device_info[]", max(len(adapters), 1))
    for info, (name, vendor, pci, uuid) in zip(infos, adapters, strict=False):
        info.name, info.vendor_id, info.pci_bus, info.uuid = (
            name.encode(),
            vendor,
            pci.encode(),
            uuid.encode(),
        )
        info.backend = b"Vulkan"
    index = ffi.new("int32_t *")
    check(lib.vn_adapter_choose(infos, len(adapters), ffi.NULL if wanted is None else wanted.encode(), index))
    return int(index[0])


def test_no_variable_and_no_identity_is_the_default_adapter() -> None:
    assert choose() == -1


# CUDA's documented rule: a negative index ends the list ("0,2,-1,1" is GPUs 0 and 2)
@pytest.mark.parametrize(
    ("value", "index"), [("0", 1), ("1", 0), ("1,0", 0), (" 0 , 1", 1), ("1,-1,0", 0), ("0, -3", 1)]
)
def test_cuda_indices_count_nvidia_gpus_in_pci_order(
    monkeypatch: pytest.MonkeyPatch, value: str, index: int
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert choose() == index


@pytest.mark.parametrize(
    "value", ["GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", "GPU-8932F937", "GPU-8932f937,0"]
)
def test_cuda_uuid_entries_match_the_vulkan_device_uuid(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert choose() == 0


@pytest.mark.parametrize("value", ["", "-1", "NoDevFiles", "-1 ", "\t-1\t", "NoDevFiles ", "-1,0", "-7"])
def test_cuda_naming_no_gpu_hides_nvidia_gpus_but_not_the_others(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert choose() == 2  # the first adapter not hidden: the AMD GPU


def test_cuda_naming_no_gpu_on_a_machine_without_nvidia_keeps_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert choose(FAKE[3:]) == -1


def test_a_cuda_index_with_no_nvidia_adapter_is_an_error_naming_what_was_seen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    typed(
        lambda: choose(FAKE[2:]),
        vn.InvalidArgumentError,
        "CUDA_VISIBLE_DEVICES='0'",
        "0 NVIDIA adapter",
        "llvmpipe",
        "vendor 0x10005",
        "Fix:",
    )


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("2", "NVIDIA GPU 2"),
        ("GPU-ffff", "matches 0"),
        ("MIG-4f1c", "MIG"),
        ("GPU-", "not one vyre_native can match"),
        ("zero", "'zero'"),
    ],
)
def test_an_entry_that_matches_no_gpu_is_an_error(
    monkeypatch: pytest.MonkeyPatch, value: str, why: str
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    typed(choose, vn.InvalidArgumentError, f"CUDA_VISIBLE_DEVICES='{value}'", why, "NVIDIA H200", "Fix:")


def test_variables_that_leave_no_adapter_are_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    typed(
        lambda: choose(FAKE[:2]),
        vn.InvalidArgumentError,
        "CUDA_VISIBLE_DEVICES=''",
        "no GPU",
        "num_gpus",
        "Fix:",
    )


def test_hip_indices_count_within_rocr_s_list(monkeypatch: pytest.MonkeyPatch) -> None:
    two_amd = [FAKE[2], ("AMD Radeon", AMD, "0000:03:00.0", "")]
    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", "1,0")
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")
    assert choose(two_amd) == 1  # ROCR's list is (05:00.0, 03:00.0); HIP's 1 is 03:00.0


def test_amd_uuids_are_refused_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", "GPU-4b6f6c0123456789")
    typed(choose, vn.InvalidArgumentError, "ROCR_VISIBLE_DEVICES", "other vendors' UUIDs", "Fix:")


def test_intel_sub_devices_are_refused_and_whole_gpus_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    intel = [("Intel Arc", 0x8086, "0000:03:00.0", "")]
    monkeypatch.setenv("ZE_AFFINITY_MASK", "0.1")
    typed(lambda: choose(intel), vn.InvalidArgumentError, "ZE_AFFINITY_MASK='0.1'", "sub-devices")
    monkeypatch.setenv("ZE_AFFINITY_MASK", "0")
    assert choose(intel) == 0


@pytest.mark.parametrize(
    ("wanted", "index"),
    [
        ("GPU-1a2b3c4d-0000-1111-2222-333344445555", 1),
        ("8932f937", 0),
        ("0000:05:00.0", 2),
        ("9b:00.0", 0),
        ("6D657361", 3),
    ],
)
def test_an_explicit_identity_is_a_uuid_or_a_pci_address(wanted: str, index: int) -> None:
    assert choose(wanted=wanted) == index


def test_an_explicit_identity_beats_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert choose(wanted="0000:05:00.0") == 2


@pytest.mark.parametrize("wanted", ["GPU-ffff", "0000:42:00.0", "nvidia"])
def test_an_identity_that_matches_no_adapter_is_an_error_listing_them(wanted: str) -> None:
    typed(
        lambda: choose(wanted=wanted),
        vn.InvalidArgumentError,
        f"adapter '{wanted}'",
        "matches 0",
        "0000:9b:00.0",
        "Fix:",
    )


def test_an_ambiguous_uuid_prefix_is_an_error() -> None:
    twins = [
        ("NVIDIA H200", NV, "", "8932f937-0000-0000-0000-000000000001"),
        ("NVIDIA H200", NV, "", "8932f937-0000-0000-0000-000000000002"),
    ]
    typed(lambda: choose(twins, wanted="GPU-8932f937"), vn.InvalidArgumentError, "matches 2")
    assert choose(twins, wanted="GPU-8932f937-0000-0000-0000-000000000002") == 1


# -- on this machine's real adapter ------------------------------------------------------


def real() -> dict[str, Any]:
    return vn.enumerate_adapters()[0]


def test_a_vulkan_adapter_has_its_device_uuid() -> None:
    uuid = real()["uuid"]
    assert len(uuid) == 36 and uuid.count("-") == 4


def test_a_device_made_by_uuid_is_that_adapter() -> None:
    with vn.Device(adapter="GPU-" + real()["uuid"]) as dev:
        assert dev.info["uuid"] == real()["uuid"] and dev.info["name"] == real()["name"]


def test_a_device_made_by_index_has_the_listing_s_identity() -> None:
    # alone, an adapter whose model the host has twice (two H200s) has no identity: the
    # device's info had uuid "" for every index where the listing had each GPU's
    for i, listed in enumerate(vn.enumerate_adapters()):
        with vn.Device(adapter=i) as dev:
            assert (dev.info["uuid"], dev.info["pci_bus"]) == (listed["uuid"], listed["pci_bus"]), i


def test_a_device_made_by_default_knows_its_uuid_where_its_model_is_alone() -> None:
    # wgpu's default request hands back one adapter, not a place in the listing: where the
    # host has two of its model it cannot be told from its twin, and says so with "".
    listing = vn.enumerate_adapters()
    with vn.Device() as dev:
        model = (dev.info["name"], dev.info["backend"])
        same_model = [a["uuid"] for a in listing if (a["name"], a["backend"]) == model]
        expected = set(same_model) if len(same_model) == 1 else {""}
        assert dev.info["uuid"] in expected, (dev.info, listing)


def test_a_device_honours_a_variable_that_names_no_gpu_of_another_vendor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if real()["name"].startswith("NVIDIA"):
        pytest.skip("this test needs a non-NVIDIA adapter first (lavapipe)")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # what a scheduler sets for a worker given no GPU
    with vn.Device() as dev:
        assert dev.info["name"] == real()["name"]


def test_a_device_refuses_an_assigned_gpu_vulkan_does_not_show(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "CUDA_VISIBLE_DEVICES", str(sum(a["name"].startswith("NVIDIA") for a in vn.enumerate_adapters()))
    )
    typed(vn.Device, vn.InvalidArgumentError, "CUDA_VISIBLE_DEVICES=", "Fix:")


def test_a_device_refuses_an_identity_that_matches_nothing() -> None:
    typed(
        lambda: vn.Device(adapter="GPU-00000000-dead"),
        vn.InvalidArgumentError,
        "adapter 'GPU-00000000-dead'",
        real()["name"],
    )


# -- on a host with NVIDIA GPUs (the H200 machines): against what nvidia-smi says --------


def nvidia_smi() -> list[tuple[str, str]]:
    """(UUID, PCI address) of each NVIDIA GPU in nvidia-smi's (NVML's, PCI) order."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        pytest.skip("no nvidia-smi on PATH: this host has no NVIDIA driver to compare with")
    out = subprocess.run(
        [exe, "--query-gpu=uuid,pci.bus_id", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    rows = [line.split(",") for line in out.stdout.splitlines() if line.strip()]
    # nvidia-smi's domain has 8 hex digits ("00000000:1B:00.0"), Vulkan's 4
    return [(uuid.strip(), pci.strip().lower()[-12:]) for uuid, pci in rows]


def test_each_nvidia_gpu_has_the_uuid_and_pci_address_nvidia_smi_prints() -> None:
    by_uuid = {a["uuid"]: a for a in vn.enumerate_adapters()}
    for uuid, pci in nvidia_smi():
        assert uuid.removeprefix("GPU-") in by_uuid, (uuid, list(by_uuid))
        assert by_uuid[uuid.removeprefix("GPU-")]["pci_bus"] == pci


@pytest.mark.parametrize("by", ["index", "uuid"])
def test_cuda_visible_devices_gives_each_nvidia_gpu_as_nvidia_smi_numbers_it(
    monkeypatch: pytest.MonkeyPatch, by: str
) -> None:
    for i, (uuid, _) in enumerate(nvidia_smi()):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", str(i) if by == "index" else uuid)
        with vn.Device() as dev:
            assert dev.info["uuid"] == uuid.removeprefix("GPU-")


def test_two_workers_assigned_two_gpus_get_distinct_adapters(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = nvidia_smi()
    if len(gpus) < 2:
        pytest.skip(f"this host has {len(gpus)} NVIDIA GPU(s): two workers need two")
    ctx = multiprocessing.get_context("spawn")
    seen = []
    for i in range(2):  # what Ray does for two actors of num_gpus=1: a variable each
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", str(i))
        mine, theirs = ctx.Pipe()
        proc = ctx.Process(target=vn.worker.serve, args=(theirs,), daemon=True)
        proc.start()  # a spawned child takes the environment as it is now
        assert mine.poll(120), "a worker process did not start"
        status, info = mine.recv()
        assert status == "ok", info
        seen.append(info["uuid"])
        mine.send(None)
        proc.join(60)
    assert seen == [uuid.removeprefix("GPU-") for uuid, _ in gpus[:2]]
