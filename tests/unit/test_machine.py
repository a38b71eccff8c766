"""h2lab.machine: the ``machine`` a trial is stored under and what else its timings depend on."""

from __future__ import annotations

import platform
import socket

from h2lab.machine import cpu_model, machine_id, machine_info

CPUINFO = """\
processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R)   Gold 6230  CPU @ 2.10GHz
stepping\t: 7
flags\t\t: fpu vme de pse tsc msr pae mce
bogomips\t: 4190.15

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Some Other CPU
stepping\t: 7
"""

NODE_ID = "3f1c0a9be2d4" + "ab" * 22  # 56 hex digits, as Ray's node ids


def test_cpu_model_is_the_first_model_name_with_spaces_collapsed() -> None:
    assert cpu_model(CPUINFO) == "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz"


def test_cpu_model_skips_an_empty_model_name() -> None:
    text = "model name\t:   \nmodel name\t: AMD EPYC 7763 64-Core Processor\n"
    assert cpu_model(text) == "AMD EPYC 7763 64-Core Processor"


def test_cpu_model_without_one_is_unknown() -> None:
    arm = "processor\t: 0\nBogoMIPS\t: 48.00\nFeatures\t: fp asimd\nCPU part\t: 0xd0c\n"
    assert cpu_model(arm) == "unknown"
    assert cpu_model("") == "unknown"


def test_machine_id_is_the_host_alone_or_with_the_first_12_digits_of_its_node() -> None:
    assert len(NODE_ID) == 56
    assert machine_id("vm", None) == "vm"
    assert machine_id("vm") == "vm"
    assert machine_id("vm", "") == "vm"
    assert machine_id("vm", NODE_ID) == "vm/3f1c0a9be2d4"


def test_machine_info_records_this_machine() -> None:
    info = machine_info()
    assert set(info) == {"machine", "host", "cpu_model", "kernel"}
    assert info["host"] == socket.gethostname()
    assert info["machine"] == info["host"]
    assert info["kernel"] == platform.release()
    assert info["cpu_model"] and "  " not in info["cpu_model"]


def test_machine_info_on_a_ray_node_names_the_node() -> None:
    info = machine_info(NODE_ID)
    assert info["machine"] == f"{socket.gethostname()}/3f1c0a9be2d4"
    assert info["host"] == socket.gethostname()
