#!/usr/bin/env bash
# Sets up a fresh machine, builds modelconv, converts the bundled digits classifier
# (Samples/Digits, a CNN trained with real Keras) into a Core ML classifier with an image input,
# verifies the result against the Keras model and the outputs real Keras saved, converts it on to an ML
# Program (verified against the .mlmodel), then inspects it, classifies two photos and evaluates it on the
# bundled labelled test folder; writes it with palettized and quantized weights; converts an ONNX sample.
set -euo pipefail
cd "$(dirname "$0")/.."

Scripts/setup.sh
swift build -c release --product modelconv
mkdir -p out
.build/release/modelconv convert Samples/Digits/digits_cnn.h5 \
  --input-names image --output-names probabilities \
  --image-input image --image-scale 0.00392156862745098 \
  --labels-file Samples/Digits/labels.txt \
  --short-description "Handwritten digit classifier (8x8 grayscale)" \
  -o out/Digits.mlmodel
.build/release/modelconv verify Samples/Digits/digits_cnn.h5 out/Digits.mlmodel \
  --input-names image --output-names probabilities \
  --reference Samples/Digits/digits_cnn.reference.h5 --image-scale 0.00392156862745098 --labels-file Samples/Digits/labels.txt
# A Core ML file is a source too: the neural network becomes an ML Program, verified against it.
.build/release/modelconv convert out/Digits.mlmodel -o out/Digits.mlpackage --verify
# The day after converting: look inside, classify two photos, score the labelled test folder
# (Samples/Digits/test_images, one folder per label) against the Keras file.
.build/release/modelconv inspect out/Digits.mlmodel
.build/release/modelconv predict out/Digits.mlmodel Samples/Digits/test_images/7/test_1395.png Samples/Digits/test_images/3/test_1170.png --top-k 2
.build/release/modelconv evaluate out/Digits.mlmodel Samples/Digits/test_images \
  --against Samples/Digits/digits_cnn.h5 --image-scale 1/255 --labels-file Samples/Digits/labels.txt --report out/Digits-evaluation.html
# Smaller: the same classifier with 4-bit palettized and 8-bit quantized weights (iOS 16), each verified
# against the Keras file and scored against it on the labelled folder.
for compression in "--palettize 4" "--quantize 8"; do
  name="Digits-$(echo "$compression" | tr -d ' -')"
  .build/release/modelconv convert Samples/Digits/digits_cnn.h5 --input-names image --output-names probabilities \
    --image-input image --image-scale 1/255 --labels-file Samples/Digits/labels.txt $compression -o "out/$name.mlpackage" --verify
  .build/release/modelconv evaluate "out/$name.mlpackage" Samples/Digits/test_images \
    --against Samples/Digits/digits_cnn.h5 --image-scale 1/255 --labels-file Samples/Digits/labels.txt | sed -n 1,5p
done
# An ONNX model exported from PyTorch (Samples/make_onnx_fixtures.py): with torchvision-style
# normalization and labels, to an ML Program, verified against the ONNX graph and onnxruntime's outputs.
.build/release/modelconv inspect Samples/Fixtures/onnx/tiny_cnn.onnx
.build/release/modelconv convert Samples/Fixtures/onnx/tiny_cnn.onnx --image-input input \
  --image-mean 0.485,0.456,0.406 --image-std 0.229,0.224,0.225 --labels-file Samples/Fixtures/onnx/labels_tiny_cnn.txt \
  -o out/TinyCNN.mlpackage --verify
.build/release/modelconv verify Samples/Fixtures/onnx/tiny_cnn.onnx out/TinyCNN.mlpackage \
  --image-mean 0.485,0.456,0.406 --image-std 0.229,0.224,0.225 --labels-file Samples/Fixtures/onnx/labels_tiny_cnn.txt
