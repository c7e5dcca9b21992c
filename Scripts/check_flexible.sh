#!/usr/bin/env bash
# Converts the flexible-shape fixtures (Samples/Fixtures/flexible) with ranges and enumerations into both
# formats and checks with coremltools' load_spec (Scripts/check_mlpackage.py) that each input declares exactly
# what was asked (Samples/Fixtures/flexible/expected_inputs.json) and that every ML Program loads in pymil with
# its unknown dimensions where coremltools infers symbols. Not part of CI (it needs coremltools):
#
#   PYTHON=/tmp/venv-exporters-torch/bin/python Scripts/check_flexible.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
modelconv=${MODELCONV:-$root/.build/debug/modelconv}
python=${PYTHON:-python3}
fixtures=$root/Samples/Fixtures/flexible
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ext in mlmodel mlpackage; do
  "$modelconv" convert "$fixtures/fully_conv.h5" --input-shape image=1,16:64:32,16:64:32,3 -o "$out/fully_conv_range.$ext" >/dev/null
  "$modelconv" convert "$fixtures/fully_conv.h5" --input-shape image=1,32,32,3 --input-shape image=1,48,40,3 -o "$out/fully_conv_enumerated.$ext" >/dev/null
  "$modelconv" convert "$fixtures/fully_conv.h5" --input-shape image=1,16:64:32,16:64:32,3 --image-input input1 --image-scale 1/255 -o "$out/fully_conv_image_range.$ext" >/dev/null
  "$modelconv" convert "$fixtures/fully_conv.h5" --input-shape image=1,32,32,3 --input-shape image=1,48,40,3 --image-input input1 --image-scale 1/255 -o "$out/fully_conv_image_enumerated.$ext" >/dev/null
  "$modelconv" convert "$fixtures/text_lstm.h5" --input-shape tokens=1,4:40:10 -o "$out/text_lstm_range.$ext" >/dev/null
  "$modelconv" convert "$fixtures/conv1d.h5" --input-shape signal=1,8:*:16,6 -o "$out/conv1d_unbounded.$ext" >/dev/null
  "$modelconv" convert "$fixtures/mobilenet_v3_dynamic.onnx" --input-shape input=1,3,48:128:64,48:128:64 -o "$out/mobilenet_range.$ext" >/dev/null
  "$modelconv" convert "$fixtures/mobilenet_v3_dynamic.onnx" --input-shape input=1,3,64,64 --input-shape input=1,3,96,80 -o "$out/mobilenet_enumerated.$ext" >/dev/null
done
"$python" "$root/Scripts/check_mlpackage.py" --expect "$fixtures/expected_inputs.json" "$out"/*.mlmodel "$out"/*.mlpackage
