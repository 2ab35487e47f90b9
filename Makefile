# rdx entry points. Every target installs what it needs (apt, go modules) and caches expensive artifacts under
# $(RDX_CACHE) (default ~/.cache/rdx), keyed by version.
SHELL := /bin/bash
export RDX_CACHE ?= $(HOME)/.cache/rdx
ENGINE_BUILD ?= engine/build
.DEFAULT_GOAL := help

help: ## list targets
	@grep -hE '^[a-z][a-zA-Z0-9_-]*:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort

##@ engine (C++)
deps-engine: ## install the engine's Debian build dependencies
	bash engine/tools/install-deps.sh
engine: deps-engine ## build rdxd, rdx-bench, libraries and tests (-Wall -Wextra -Werror)
	bash engine/tools/build.sh release
test-engine: engine ## gtest suite + multi-process integration tests + sanitizer builds
	bash engine/tools/test.sh
bench-engine: engine ## Google Benchmark microbenchmarks, reported as ratios
	bash engine/tools/bench.sh

##@ operator (Go)
manifests: ## regenerate CRDs into crds/ with controller-gen
	$(MAKE) -C operator manifests
generate: ## regenerate deepcopy code
	$(MAKE) -C operator generate
operator: ## build the operator manager
	$(MAKE) -C operator build
test-operator: ## operator tests on envtest (real kube-apiserver + etcd)
	$(MAKE) -C operator test
kubectl-rdx: ## build the kubectl plugin into the tools directory ($(RDX_CACHE)/tools/bin)
	cd operator && go build -o $(RDX_CACHE)/tools/bin/kubectl-rdx ./cmd/kubectl-rdx

##@ cluster, images, e2e
cluster-up: ## bring up the offline single-node Kubernetes cluster (or use $$KUBECONFIG if reachable)
	bash hack/cluster.sh up
down: ## tear down the local cluster and everything it changed on the host
	bash hack/cluster.sh down
images: ## build the engine and operator images offline and load them into the local cluster
	bash hack/images.sh
demo: ## end-to-end demo: cluster, operator via Helm, a TxCluster, a short benchmark
	bash hack/demo.sh
test-e2e: ## e2e suite against the cluster in KUBECONFIG (brings the local one up if needed)
	bash hack/e2e.sh
test-softroce: ## engine and a TxCluster on real verbs on soft-RoCE inside a qemu VM
	bash hack/softroce/run.sh
bench-replication: engine ## Odyssey's Table 3 on this machine: every replication protocol, tcp, 3 nodes
	python3 engine/tools/replication_table.py
bench-cc: engine ## RCC's comparison on this machine: every transaction protocol, YCSB-RCC and SmallBank, tcp, 3 nodes
	python3 engine/tools/cc_table.py
bench-replication-softroce: ## Odyssey's Table 3 over verbs on soft-RoCE in the VM (stage table3), printed like bench-replication
	RDX_SOFTROCE_STAGES="devinfo:60 table3:3600" RDX_SOFTROCE_MAX_RATIO= bash hack/softroce/run.sh
	python3 engine/tools/replication_table.py --from _out/softroce/share/results/table3 \
	  --where "3 nodes, verbs on soft-RoCE (rxe) in a qemu VM, 1 worker each"
test-kind-softroce: ## e2e suite with a verbs TxCluster on kind + rxe (Docker hosts with rdma_rxe; elsewhere checks it fails fast)
	bash hack/softroce/kind.sh ci

##@ all
test: ## every test tier (what CI runs): engine, operator, soft-RoCE, e2e; later tiers prepared in the background
	bash hack/test-all.sh

.PHONY: help deps-engine engine test-engine bench-engine manifests generate operator kubectl-rdx test-operator cluster-up down images demo test-e2e test-softroce test-kind-softroce bench-replication bench-replication-softroce bench-cc test
