"""What the API admits is what rdxd implements: the TxCluster CRD's enums against `rdxd --list --json`.

The CRD (crds/, generated from operator/api) refuses at admission every protocol, transport and primitive value
rdxd does not register, and admits every one it does, so the two cannot drift apart.
"""
import json
import os
import re
import subprocess

import yaml

from conftest import BIN, ENGINE

CRD = os.path.join(ENGINE, "..", "crds", "rdx.dev_txclusters.yaml")


def registered():
    out = subprocess.run([os.path.join(BIN, "rdxd"), "--list", "--json"], capture_output=True, text=True, check=True,
                         timeout=30).stdout
    return json.loads(out)


def crd_spec():
    with open(CRD) as f:
        crd = yaml.safe_load(f)
    (version,) = crd["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]


def test_crd_admits_exactly_what_rdxd_registers():
    reg, spec = registered(), crd_spec()
    names = {family: sorted(e["name"] for e in entries) for family, entries in reg.items()}
    assert sorted(spec["transport"]["properties"]["kind"]["enum"]) == names["transport"]
    assert sorted(spec["replication"]["properties"]["protocol"]["enum"]) == names["replication"]
    # "none" is no protocol: single-key commands only (what replication protocols without transactions need).
    assert sorted(spec["transactions"]["properties"]["protocol"]["enum"]) == sorted(names["txn"] + ["none"])
    # A primitives value is admitted if a transaction protocol honours it (a CEL rule ties it to those protocols:
    # test_crd_refuses_primitives_a_protocol_does_not_honour).
    honoured = set.union(*(set(e["primitives"]) for e in reg["txn"]))
    assert sorted(spec["transport"]["properties"]["primitives"]["enum"]) == sorted(honoured)
    # hybrid's per-phase choice admits exactly the phases some protocol runs one-sided (rdxd refuses, per protocol,
    # the phases it runs over RPC only).
    onesided = sorted(set.union(*(set(e["onesided_phases"]) for e in reg["txn"])))
    assert sorted(spec["transport"]["properties"]["onesidedPhases"]["items"]["enum"]) == onesided
    # Defaults name registered values.
    assert spec["transactions"]["properties"]["protocol"]["default"] in names["txn"]
    assert spec["replication"]["properties"]["protocol"]["default"] in names["replication"]
    assert spec["transport"]["properties"]["primitives"]["default"] in set.intersection(
        *(set(e["primitives"]) for e in reg["txn"]))


def cel_rules():
    with open(CRD) as f:
        crd = yaml.safe_load(f)
    (version,) = crd["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]["properties"]["spec"].get("x-kubernetes-validations", [])


def test_crd_refuses_primitives_a_protocol_does_not_honour():
    # Primitives other than rpc are admitted with exactly the transaction protocols that honour them all.
    pattern = re.compile(r"^self\.transport\.primitives == 'rpc' \|\| self\.transactions\.protocol in \[(.*)\]$")
    (listed,) = [m.group(1) for m in (pattern.match(r["rule"]) for r in cel_rules()) if m]
    names = sorted(n.strip().strip("'") for n in listed.split(","))
    others = {"onesided", "hybrid"}
    assert names == sorted(e["name"] for e in registered()["txn"] if others <= set(e["primitives"])), names


def test_crd_refuses_transactions_over_protocols_that_do_not_carry_them():
    # Families and keys: a TxCluster runs a transaction protocol over its replication protocol's replica log; one
    # that replicates single keys only must have transactions.protocol none, which a CEL rule of the CRD says for
    # exactly those protocols.
    rules = cel_rules()
    single_key = re.compile(r"^!\(self\.replication\.protocol in \[(.*)\]\) \|\| self\.transactions\.protocol == 'none'$")
    (listed,) = [m.group(1) for m in (single_key.match(r["rule"]) for r in rules) if m]
    names = sorted(n.strip().strip("'") for n in listed.split(","))
    assert names == sorted(e["name"] for e in registered()["replication"] if not e["carries_transactions"]), names


def test_rdxd_refuses_an_unregistered_protocol_naming_what_exists(tmp_path):
    topo = {"cluster": "t", "epoch": 1, "replication": {"protocol": "derecho"},
            "shards": [{"id": 0, "members": ["n0"]}], "nodes": [{"name": "n0", "host": "127.0.0.1", "port": 7999}]}
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(topo))
    p = subprocess.run([os.path.join(BIN, "rdxd"), "--config", str(path), "--node", "n0"], capture_output=True,
                       text=True, timeout=30)
    log = p.stdout + p.stderr
    assert p.returncode == 2, log
    available = ", ".join(e["name"] for e in registered()["replication"])
    assert "replication protocol 'derecho' is not implemented" in log and f"(available: {available})" in log, log
