#!/usr/bin/env bash
# Debian packages the engine builds and tests with. Idempotent; fast when everything is installed.
source "$(dirname "$0")/../../hack/lib.sh"
apt_install build-essential cmake ninja-build ccache pkg-config clang libclang-rt-14-dev clang-format \
  libibverbs-dev librdmacm-dev ibverbs-providers rdma-core \
  libgtest-dev libgmock-dev libbenchmark-dev libfmt-dev libspdlog-dev nlohmann-json3-dev libcli11-dev \
  redis-server redis-tools python3 python3-venv
