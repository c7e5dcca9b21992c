#!/usr/bin/env bash
# Installs the Debian packages the build needs (libhdf5, libprotobuf-c, protoc-c, pkg-config, oneDNN, libzip, libpng, libjpeg-turbo) and the ONNX test models the tests read (libonnx-testdata).
# Skips apt when everything is already there; uses sudo when not root.
set -euo pipefail

packages=(libhdf5-dev libprotobuf-c-dev protobuf-c-compiler pkgconf libdnnl-dev libzip-dev libpng-dev libjpeg62-turbo-dev libonnx-testdata)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${missing[@]}"
fi
