#!/usr/bin/env python3
"""A stream of real speech features for a microWakeWord model, with LiteRT's outputs, in the layout `modelconv
verify --reference` replays (root attribute `streaming` = 1), to check the wake-word models of pymicro-wakeword by
hand on speech rather than random features (not fixtures, not CI). Needs espeak-ng (Debian's package) and a venv
with `pymicro-wakeword==2.5.0 ai-edge-litert==2.3.0 h5py`:

    /tmp/venv-ww/bin/python Samples/make_wakeword_references.py --out /tmp/ww \\
        --say "okay nabu" .../site-packages/pymicro_wakeword/models/okay_nabu.tflite
    modelconv verify okay_nabu.tflite OkayNabu.mlpackage --reference /tmp/ww/okay_nabu.reference.h5

The audio: silence (0.5 s), each `--say` phrase spoken by espeak-ng (its default voice, 22 050 Hz) resampled to
16 kHz by zero-padding its spectrum (numpy's FFT), 0.5 s of silence after each, then 1 s of silence. The features:
pymicro-wakeword's own MicroWakeWordFeatures (pymicro-features' MicroFrontend: 40 channels per 10 ms), grouped by
the model's stride (3 frames) and quantized as pymicro-wakeword quantizes them (round(x / scale + zero point) to
the input's integer type). LiteRT (one thread, one interpreter, the steps in order carrying the model's variables)
gives the outputs; the same steps through pymicro-wakeword's own TFLite library give nearly the same (their
largest difference printed: another TFLite build's integer kernels). Writes `<name>.reference.h5`: `inputs/0` [steps, 3, 40] and `outputs/0` [steps, 1] (the integers,
float32), `streaming` = 1, `computed_by`, and prints the largest probability and where (the detection
pymicro-wakeword makes averages `sliding_window_size` steps against `probability_cutoff`).
"""

import argparse
import os
import subprocess
import tempfile
import wave

import h5py
import numpy as np
from ai_edge_litert.interpreter import Interpreter


def speech(phrases):
    """16 kHz int16 audio: the phrases spoken by espeak-ng with silences around them."""
    silence = lambda seconds: np.zeros(int(16000 * seconds), np.int16)  # noqa: E731
    parts = [silence(0.5)]
    with tempfile.TemporaryDirectory() as folder:
        for index, phrase in enumerate(phrases):
            path = os.path.join(folder, "%d.wav" % index)
            subprocess.run(["espeak-ng", "-w", path, phrase], check=True)
            with wave.open(path) as handle:
                rate = handle.getframerate()
                samples = np.frombuffer(handle.readframes(handle.getnframes()), np.int16).astype(np.float64)
            count = int(round(len(samples) * 16000 / rate))
            spectrum = np.fft.rfft(samples)
            resampled = np.fft.irfft(spectrum[:count // 2 + 1], count) * count / len(samples)
            parts += [np.clip(np.round(resampled), -32768, 32767).astype(np.int16), silence(0.5)]
    parts.append(silence(1.0))
    return np.concatenate(parts)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--say", action="append", required=True, help="a phrase (repeatable)")
    parser.add_argument("model", help="a pymicro-wakeword .tflite (its .json beside it)")
    args = parser.parse_args()
    from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures
    audio = speech(args.say)
    frames = list(MicroWakeWordFeatures().process_streaming(audio.tobytes()))
    interpreter = Interpreter(model_path=args.model, num_threads=1)
    interpreter.allocate_tensors()
    detail = interpreter.get_input_details()[0]
    output = interpreter.get_output_details()[0]
    stride = int(detail["shape"][1])
    scale, zero = detail["quantization"]
    given, got = [], []
    for start in range(0, len(frames) - stride + 1, stride):
        features = np.concatenate(frames[start:start + stride], axis=1)
        quantized = np.round(features / scale + zero).astype(detail["dtype"])
        interpreter.set_tensor(detail["index"], quantized.reshape(detail["shape"]))
        interpreter.invoke()
        given.append(quantized.reshape(detail["shape"])[0].astype(np.float32))
        got.append(interpreter.get_tensor(output["index"])[0].astype(np.float32))
    # The same steps through pymicro-wakeword's own library.
    own = MicroWakeWord.from_config(os.path.splitext(args.model)[0] + ".json")
    theirs = []
    for start in range(0, len(frames) - stride + 1, stride):
        own._features = list(frames[start:start + stride - 1])  # noqa: SLF001 (one step at a time)
        own.process_streaming_prob(frames[start + stride - 1])
        theirs.append(own._probabilities[-1])  # noqa: SLF001
    output_scale, output_zero = output["quantization"]
    ours = [(g[0] - output_zero) * output_scale for g in got]
    own_difference = float(np.abs(np.array(ours) - np.array(theirs)).max())
    name = os.path.splitext(os.path.basename(args.model))[0]
    os.makedirs(args.out, exist_ok=True)
    target = os.path.join(args.out, name + ".reference.h5")
    import ai_edge_litert
    with h5py.File(target, "w") as f:
        f.create_dataset("inputs/0", data=np.stack(given))
        f.create_dataset("outputs/0", data=np.stack(got))
        f.attrs["streaming"] = 1
        f.attrs["computed_by"] = "ai-edge-litert %s on espeak-ng speech (%s), pymicro-wakeword 2.5.0 features" % (
            getattr(ai_edge_litert, "__version__", "?"), "; ".join(args.say))
    probabilities = np.array(ours)
    peak = int(np.argmax(probabilities))
    print("wrote %s: %d steps (%.1f s of audio), probability at most %.3f (step %d), above 0.5 at %d steps; "
          "pymicro-wakeword's own TFLite library differs from LiteRT by at most %g" % (
              target, len(given), len(audio) / 16000, probabilities[peak], peak, int((probabilities > 0.5).sum()),
              own_difference))


if __name__ == "__main__":
    main()
