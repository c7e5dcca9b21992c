#!/usr/bin/env python3
"""Generate Keras .h5 fixtures for recurrent, 1-D, wrapper, normalization and preprocessing layers.

Companion of `make_fixtures.py` (whose helpers it imports: dialect import, seeding, weight randomization,
reference writing, io names, saving). Run once per Keras dialect in the matching virtual environment, then
once for the hand-written Keras 1 files:

    python make_layer_fixtures.py --dialect tfkeras215   # venv from requirements-tfkeras215.txt
    python make_layer_fixtures.py --dialect tfkeras2     # venv from requirements-keras3.txt
    python make_layer_fixtures.py --dialect keras3       # venv from requirements-keras3.txt
    python make_layer_fixtures.py --keras1               # venv from requirements-tfkeras215.txt
    python make_layer_fixtures.py --dialect keras3 --check   # only re-check existing files
    python make_layer_fixtures.py --keras1 --check           # only re-check the Keras 1 files
    python make_layer_fixtures.py --dialect keras3 --models text_bilstm,custom_layer   # a subset

`--out` defaults to `Samples/Fixtures/layers`. Files go to `<out>/<dialect>/<model>.h5` (full model, legacy
HDF5 layout, saved by that Keras) with `<out>/<dialect>/<model>.reference.h5` next to it, in the format of
make_fixtures.py: root attrs `keras_version`, `dialect`, `labels` (classifiers); `inputs/<i>` and
`outputs/<i>` float32 [3, ...] with attr `name` (the Keras input / output layer name); `coreml_weights/<layer>`
for the layer classes make_fixtures.py maps (Conv2D, Dense, ...; empty otherwise); for the three image models
also `pixels/0` (the same 0..255 RGB channels-last array as `inputs/0`). Every run replaces its dialect's
entries in `<out>/manifest.json` (path, reference, Keras version, input/output names and shapes, layer classes
including the layers inside wrappers, the weight names and shapes as saved in the file, integer inputs,
skipped models and why, notes). After writing, every model is reloaded with its own Keras
(`load_model(..., compile=False)`, ScaleShift as a custom object) and must reproduce its reference outputs;
`--check` does only that, for files already written.

Weights are seeded random values from make_fixtures.randomize_weights (kernels normal/sqrt(fan_in); every other
weight, e.g. recurrent kernels, biases, embeddings, normal*0.5; LayerNormalization gamma/beta normal), the same
for the same layer name in every dialect. Inputs are 3 seeded samples: normal(0, 1) floats unless noted;
token ids are integers in [0, input_dim) stored as float32 (manifest `integer_inputs`); pixel inputs are
integers 0..255 stored as float32 (manifest `pixel_inputs`).

Models (`<dialect>/<name>.h5`):

    text_bilstm            Input((7,), int32 token ids < 20) -> Embedding(20, 6) -> Bidirectional(LSTM(5), concat)
                           -> Dense(3, softmax); labels neg, neu, pos
    conv1d_gru             Input((10, 4)) -> Conv1D(6, 3, causal, relu) -> GRU(5, return_sequences, reset_after=False)
                           -> TimeDistributed(Dense(2))
    lstm_variants          Input((6, 3)) -> LSTM(4, return_sequences) -> LSTM(3, go_backwards) -> Dense(2)
    lstm_sequences_out     Input((6, 3)) -> LSTM(4, return_sequences, recurrent_activation=hard_sigmoid)
                           (Keras 2 hard_sigmoid = clip(0.2x+0.5, 0, 1); Keras 3 = relu6(x+3)/6)
    gru_reset_after        Input((5, 3)) -> GRU(4) (defaults: reset_after=True) -> Dense(2)
    gru_reset_before       Input((5, 3)) -> GRU(4, reset_after=False, return_sequences)
    simple_rnn             Input((5, 3)) -> SimpleRNN(4, return_sequences, tanh) -> SimpleRNN(3, relu)
    bidirectional_modes    Input((5, 3)) -> 4 x Bidirectional(LSTM(2, return_sequences), merge_mode=concat/sum/mul/ave)
                           -> Concatenate -> [5, 10]
    bidirectional_gru_last Input((5, 3)) -> Bidirectional(GRU(3, reset_after=False), merge_mode=sum)
    conv1d_variants        Input((12, 4)) -> Conv1D(5, 3, same) -> Conv1D(4, 3, valid, dilation 2)
                           -> Conv1D(3, 2, causal)
    pooling1d              Input((12, 3)) -> MaxPooling1D(2) -> AveragePooling1D(3, strides 1, same)
                           -> outputs GlobalAveragePooling1D, GlobalMaxPooling1D
    sequence_reshape       Input((8, 3)) -> ZeroPadding1D((1, 2)) -> Cropping1D((2, 1)) -> UpSampling1D(2) -> [16, 3]
    repeat_vector          Input((4,)) -> Dense(3) -> RepeatVector(5) -> [5, 3]
    time_distributed       Input((3, 6, 6, 2)) -> TimeDistributed(Conv2D(3, 3)) -> TimeDistributed(Flatten)
                           -> TimeDistributed(Dense(2))
    masking_noop           Input((5, 3)) -> Masking(0.0) -> Dense(2) (no input timestep is all zeros)
    dense_rank3_4          Input((4, 5)) -> Dense(3)          (Dense on a rank-3 tensor)
    dense_rank4            Input((3, 4, 5)) -> Dense(2)       (Dense on a rank-4 tensor)
    flatten_rank3          Input((4, 5)) -> Flatten -> Dense(2)
    reshape_sequence_image Input((12, 1)) -> Reshape((2, 3, 2)) -> Conv2D(2, 2)   (a [T, C] sequence reshaped to an image)
    reshape_ranks          Input((12, 2)) -> five branches, each ending in a layer that reads the element order:
                           Reshape((24,)) -> Dense(3); Reshape((8, 3)) -> Conv1D(2, 2); Reshape((2, 3, 4)) -> Conv2D(2, 2);
                           Reshape((2, 3, 4)) -> Conv2D(4, 1) -> Reshape((6, 4)) -> Conv1D(2, 2);
                           Flatten -> Dense(24) -> Reshape((4, 6)) -> Conv1D(2, 2)
    flatten_rank5          Input((3, 2, 2, 2)) -> Flatten -> Dense(2)   (Flatten of a [T, H, W, C] tensor)
    conv2d_transpose       Input((5, 5, 3)) -> Conv2DTranspose(4, 3, strides 2, same)
                           -> Conv2DTranspose(2, 3, strides 1, valid) -> [12, 12, 2]
    conv2d_transpose_output_padding
                           Input((5, 5, 3)) -> Conv2DTranspose(2, 3, strides 2, valid, output_padding 1) -> [12, 12, 2]
    layer_norm             Input((4, 6)) -> LayerNormalization() -> Dense(2)
    layer_norm_image       Input((3, 3, 4)) -> LayerNormalization(axis=-1)
    unit_norm              Input((6,)) -> UnitNormalization() -> Dense(2)
    dot_normalize          Inputs (4,), (4,) -> [Dot(axes=1, normalize=True), Dot(axes=1)] -> Concatenate -> [2]
    rescaling_image        pixels Input((8, 8, 3)) -> Rescaling(1/127.5, offset=-1) -> Conv2D(2, 3)
                           -> GlobalAveragePooling2D -> Dense(3, softmax); labels a, b, c
    normalization_image    pixels Input((8, 8, 3)) -> Normalization(ImageNet mean*255, (std*255)**2 per channel)
                           -> Conv2D(2, 3) -> Flatten -> Dense(2)
    normalization_scalar   pixels Input((8, 8, 3)) -> Normalization(mean=127.5, variance=127.5**2) -> Conv2D(2, 1)
                           -> GlobalMaxPooling2D
    resizing_error         Input((10, 10, 3)) -> Resizing(6, 6) -> Conv2D(2, 3)     (the converter must refuse it)
    center_crop_error      Input((10, 10, 3)) -> CenterCrop(6, 6) -> Conv2D(2, 3)   (the converter must refuse it)
    lambda_error           Input((4,)) -> Lambda(x * 2) -> Dense(2)   (the converter must refuse it; Keras 3
                           writes it too, but loads it only with safe_mode=False)
    custom_layer           Input((4,)) -> Dense(3) -> ScaleShift(shift=0.5): a custom layer defined in this
                           script, class_name `ScaleShift`, weight `scale` [C], config float `shift`,
                           y = x * scale + shift (not registered: loading needs custom_objects)
    gru_hard_sigmoid       Keras 3 only: Input((5, 3)) -> GRU(4, reset_after=False, return_sequences,
                           recurrent_activation=hard_sigmoid) -> GRU(3, reset_after=False, hard_sigmoid)
                           (Keras 3 hard_sigmoid = relu6(x+3)/6, slope 1/6: Core ML's recurrent layers only
                           take hard sigmoid with alpha 0.2 / beta 0.5)
    lstm_hard_sigmoid      Keras 3 only: Input((5, 3)) -> Bidirectional(LSTM(3, return_sequences,
                           recurrent_activation=hard_sigmoid), concat) -> LSTM(2, recurrent_activation=hard_sigmoid)

    recurrent_<act>        one per act in exponential, hard_silu (Keras 3 only), gelu, selu, softsign, softplus, elu,
                           relu6 (Keras 3 only): Input((4, 3)) -> LSTM(3, recurrent_activation=act),
                           LSTM(3, recurrent_activation=act, activation=act, go_backwards), GRU(3, recurrent_activation=act,
                           go_backwards, return_sequences), GRU(2, act, act, reset_after=False), SimpleRNN(3, act,
                           go_backwards), Bidirectional(LSTM(2, recurrent_activation=act, return_sequences)),
                           Bidirectional(GRU(2, recurrent_activation=act), sum) -> one concatenated vector;
                           weights x 0.4 after randomization (an exp gate would otherwise overflow float32);
                           exponential is the gate activation only in LSTM/GRU (exp of the state overflows)

A model whose layer or option does not exist in a dialect is skipped and listed in the manifest's `skipped`.

Keras 1 (`--keras1`, tf.keras 2.15 venv): `<out>/keras1/<name>.json` + `<name>.h5` for the five models below:
architecture JSON in the Keras 1.2 format and a weights-only HDF5 in the Keras 1 `save_weights` layout, written
by hand (Keras 1 does not install on Python 3.11) from an equivalent tf.keras 2.15 model that also computes the
reference outputs (`<name>.reference.h5`, dialect `keras1`, keras_version "1.2.2", attr
`made_with_keras_version`). The check rebuilds a tf.keras model from the Keras 1 JSON with the mapping below,
loads the Keras 1 weights file into it (converting the layouts back by weight name) and compares to the
reference; `--keras1 --check` does only that, for the files already written. Layer names are Keras 1's
automatic ones (`<lowercase class name>_<n>`, e.g. `simplernn_1`, `batchnormalization_1`).

    keras1_sequential: Convolution2D(4, 3, 3, border_mode='same', activation='relu', input 12x12x3)
                       -> MaxPooling2D((2, 2)) -> AtrousConvolution2D(3, 3, 3, atrous_rate=(2, 2), border_mode='valid')
                       -> Flatten -> Dense(output_dim=2)
    keras1_merge:      Input(6) -> Dense(4, relu) `dense_1`, Dense(4, tanh) `dense_2`
                       -> Merge([dense_1, dense_2], mode='sum') `merge_1`
                       -> Merge([merge_1, dense_1], mode='concat', concat_axis=-1) `merge_2` -> Dense(2) `dense_3`
    keras1_lstm:       Embedding(input_dim=15, output_dim=5, input_length=6) (int32 token ids < 15)
                       -> LSTM(output_dim=4) (tanh, inner_activation hard_sigmoid, last step)
                       -> Dense(output_dim=3, activation='softmax')
    keras1_gru_rnn:    input 5x3 -> GRU(output_dim=4, return_sequences=True) -> SimpleRNN(output_dim=3)
                       -> Dense(output_dim=2)
    keras1_bn_deconv:  input 6x6x2 -> Convolution2D(3, 3, 3, border_mode='same') -> BatchNormalization(mode=0,
                       axis=-1, epsilon=1e-3) -> Deconvolution2D(2, 3, 3, output_shape=(None, 12, 12, 2),
                       subsample=(2, 2), border_mode='same') -> Flatten -> Dense(output_dim=2)

Keras 1.2 -> Keras 2 field mapping used (all `dim_ordering: "tf"`, i.e. channels last):

    JSON root           {"class_name": "Sequential", "config": [layer, ...], "keras_version": "1.2.2"}: a
                        Sequential's config is a plain list of {"class_name", "config"}; the first layer carries
                        `batch_input_shape` (e.g. [null, 12, 12, 3]) and `input_dtype` ("float32"; "int32" for
                        Embedding) (no InputLayer entry; Keras 1 named the implied input `<first layer>_input`).
                        {"class_name": "Model", "config": {"name", "layers": [{"class_name", "config", "name",
                        "inbound_nodes": [[[layer, node, tensor], ...]]}], "input_layers", "output_layers"}}
                        (inbound node entries have 3 elements, no kwargs dict); InputLayer config
                        {batch_input_shape, input_dtype, sparse, name}.
    Convolution2D       nb_filter -> filters; (nb_row, nb_col) -> kernel_size; border_mode -> padding;
                        subsample -> strides; dim_ordering "tf" -> data_format channels_last; bias -> use_bias;
                        init -> kernel_initializer; W_/b_regularizer, W_/b_constraint.
    AtrousConvolution2D as Convolution2D, plus atrous_rate -> dilation_rate.
    Deconvolution2D     -> Conv2DTranspose: Convolution2D's keys plus `output_shape` [null, rows, cols, nb_filter]
                        (the full output shape incl. batch; with border_mode same and subsample s it is in * s).
    MaxPooling2D        pool_size, strides (written resolved, = pool_size), border_mode -> padding, dim_ordering.
    Flatten             name, trainable only.
    Dense               output_dim -> units; init, activation, bias -> use_bias, input_dim (null unless first).
    Merge               mode "sum" -> Add, "concat" -> Concatenate(axis=concat_axis) (also mode_type "raw",
                        dot_axes, output_shape(_type), output_mask(_type), arguments).
    Embedding           input_dim, output_dim (same names in Keras 2), input_length, init "uniform",
                        mask_zero (false), W_regularizer, W_constraint, activity_regularizer, dropout (0.0).
    SimpleRNN, GRU,     output_dim -> units; activation; inner_activation -> recurrent_activation (GRU, LSTM;
    LSTM                hard_sigmoid = clip(0.2x+0.5, 0, 1) in Keras 1 and tf.keras 2.15); init, inner_init
                        (-> kernel_/recurrent_initializer), forget_bias_init "one" (LSTM; ~ unit_forget_bias);
                        W_/U_/b_regularizer; dropout_W/dropout_U (-> dropout/recurrent_dropout, 0.0 here);
                        return_sequences, go_backwards, stateful, unroll; consume_less "cpu" (weights per gate;
                        "mem" stores the same, "gpu" would store concatenated `<layer>_W/_U/_b`, not written here);
                        input_dim (the input size, set by build) and input_length (null: not passed; the length
                        is in the first layer's batch_input_shape). Keras 1's GRU is tf.keras GRU(reset_after=
                        False) (h~ = act(x W_h + b_h + (r * h) U_h); h = z * h_prev + (1 - z) * h~).
    BatchNormalization  epsilon, mode (0: feature-wise, inference uses the running statistics), axis (-1),
                        momentum, gamma_/beta_regularizer.
    weights file        root attr `layer_names` (every layer, including a Model's InputLayer, but not a
                        Sequential's implied input); one group per layer with attr `weight_names`; names as
                        fixed-length byte strings (numpy `S<n>`, as h5py 2 wrote lists of bytes), empty
                        `weight_names` as an empty float64 array. (Keras 1 on the TensorFlow backend would have
                        written variable names with `:0`; the Theano-style names are used.) Datasets, in
                        `weight_names` order:
        Convolution2D, AtrousConvolution2D
                        `<layer>_W` [kh, kw, in, out] (tf ordering, not flipped), `<layer>_b` [out]
        Dense           `<layer>_W` [in, out], `<layer>_b` [out]
        Embedding       `<layer>_W` [input_dim, output_dim]
        SimpleRNN       `<layer>_W` [in, units], `<layer>_U` [units, units], `<layer>_b` [units]
        LSTM            per gate, gates in the order i, c, f, o: `<layer>_W_i`, `_U_i`, `_b_i`, `_W_c`, `_U_c`,
                        `_b_c`, `_W_f`, `_U_f`, `_b_f`, `_W_o`, `_U_o`, `_b_o` (W [in, units], U [units, units],
                        b [units]); Keras 2 kernel = concat([W_i, W_f, W_c, W_o], -1), recurrent_kernel and bias
                        likewise (Keras 2 gate order i, f, c, o).
        GRU             per gate, z, r, h: `<layer>_W_z`, `_U_z`, `_b_z`, `_W_r`, `_U_r`, `_b_r`, `_W_h`, `_U_h`,
                        `_b_h`; Keras 2 kernel = concat([W_z, W_r, W_h], -1), likewise U and b (bias [3 * units]).
        BatchNormalization
                        `<layer>_gamma`, `<layer>_beta`, `<layer>_running_mean`, `<layer>_running_std` [C]; despite
                        its name `running_std` holds the moving VARIANCE (Keras 1.2 updates it with the batch
                        variance and calls tf.nn.batch_normalization(x, mean, running_std, beta, gamma, epsilon)),
                        i.e. Keras 2's moving_variance: y = gamma * (x - mean) / sqrt(running_std + eps) + beta.
        Deconvolution2D `<layer>_W` [nb_row, nb_col, input_channels, nb_filter], `<layer>_b` [nb_filter]: Keras 1.2's
                        Deconvolution2D inherits Convolution2D.build, so W has the Convolution2D layout
                        [kh, kw, in, out], NOT tf.keras Conv2DTranspose's [kh, kw, out, in]; Keras 1's TensorFlow
                        backend deconv2d swaps the last two axes before tf.nn.conv2d_transpose, and Keras 2's
                        legacy loader transposes (0, 1, 3, 2). So Conv2DTranspose kernel = W.transpose(0, 1, 3, 2);
                        no spatial flip.
"""

import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_fixtures as mf  # noqa: E402  (also sets the TF/Keras environment variables)

import numpy as np  # noqa: E402
import h5py  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "Fixtures", "layers")
DIALECTS = mf.DIALECTS
KERAS1_VERSION = "1.2.2"


class Skip(Exception):
    """Raised by a builder when its layer or option does not exist in this Keras."""


def K():
    return mf.K


def L():
    return mf.K.layers


# --------------------------------------------------------------------------------------------------
# custom layer


_SCALE_SHIFT = {}


def scale_shift_class():
    """`ScaleShift` (y = x * scale + shift) for the current dialect's Layer base class (made once per dialect).

    Not registered with register_keras_serializable, so the config's class_name is plain `ScaleShift`
    (a registered class would be written as `Package>ScaleShift` by Keras 2).
    """
    if mf.DIALECT in _SCALE_SHIFT:
        return _SCALE_SHIFT[mf.DIALECT]
    base = mf.K.layers.Layer

    class ScaleShift(base):
        def __init__(self, shift=0.0, **kwargs):
            super().__init__(**kwargs)
            self.shift = float(shift)

        def build(self, input_shape):
            channels = int(input_shape[-1])
            self.scale = self.add_weight(name="scale", shape=(channels,), initializer="ones", trainable=True)
            super().build(input_shape)

        def call(self, inputs):
            return inputs * self.scale + self.shift

        def compute_output_shape(self, input_shape):
            return input_shape

        def get_config(self):
            config = super().get_config()
            config["shift"] = self.shift
            return config

    ScaleShift.__module__ = "make_layer_fixtures"
    _SCALE_SHIFT[mf.DIALECT] = ScaleShift
    return ScaleShift


def custom_objects():
    return {"ScaleShift": scale_shift_class()}


# --------------------------------------------------------------------------------------------------
# the models. Each builder returns (model, info); info keys: inputs (list of "normal", "pixels",
# ("tokens", input_dim)), labels, notes, skipped (partial skips), custom_layers.


def bidi_note():
    if mf.is_keras3():
        return ("Keras 3 config: Bidirectional has `layer` (renamed forward_<name>) and an explicit `backward_layer` "
                "(backward_<name>, go_backwards true); no time_major/implementation fields")
    return ("Keras 2 config: Bidirectional has only `layer` (the wrapped layer's own name); the backward copy is "
            "implied; weights under forward_<name>/ and backward_<name>/")


def td_note():
    if mf.is_keras3():
        return "Keras 3 weight names include the wrapped layer: <td layer>/<inner layer>/kernel"
    return "Keras 2 weight names skip the wrapped layer: <td layer>/kernel:0"


def need(layer_name):
    if not mf.has_layer(layer_name):
        raise Skip(f"layers.{layer_name} does not exist in Keras {mf.KERAS_VERSION}")


def b_text_bilstm():
    l = L()
    i = K().Input((7,), dtype="int32", name="tokens")
    x = l.Embedding(20, 6, name="embedding")(i)
    x = l.Bidirectional(l.LSTM(5, name="lstm"), merge_mode="concat", name="bilstm")(x)
    x = l.Dense(3, activation="softmax", name="probabilities")(x)
    notes = ["inputs/0 holds integer token ids in [0, 20) stored as float32 (Keras input dtype int32)", bidi_note()]
    if not mf.is_keras3():
        notes.append("Keras 2 config: Embedding carries batch_input_shape [null, null] and input_length null")
    return K().Model(i, x, name="text_bilstm"), {
        "inputs": [("tokens", 20)], "labels": ["neg", "neu", "pos"], "notes": notes}


def b_conv1d_gru():
    l = L()
    i = K().Input((10, 4), name="input")
    x = l.Conv1D(6, 3, padding="causal", activation="relu", name="conv1d_causal")(i)
    x = l.GRU(5, return_sequences=True, reset_after=False, name="gru")(x)
    x = l.TimeDistributed(l.Dense(2, name="dense"), name="td_dense")(x)
    return K().Model(i, x, name="conv1d_gru"), {"notes": [td_note()]}


def b_lstm_variants():
    l = L()
    i = K().Input((6, 3), name="input")
    x = l.LSTM(4, return_sequences=True, name="lstm_seq")(i)
    x = l.LSTM(3, go_backwards=True, name="lstm_backwards")(x)
    x = l.Dense(2, name="dense")(x)
    return K().Model(i, x, name="lstm_variants"), {"notes": [
        "lstm_backwards (go_backwards, return_sequences False) outputs its state after reading the sequence "
        "from the last timestep to the first"]}


def b_lstm_sequences_out():
    l = L()
    i = K().Input((6, 3), name="input")
    x = l.LSTM(4, return_sequences=True, recurrent_activation="hard_sigmoid", name="lstm_hard_sigmoid")(i)
    note = ("Keras 3 hard_sigmoid is relu6(x+3)/6 (slope 1/6)" if mf.is_keras3()
            else "Keras 2 hard_sigmoid is clip(0.2x+0.5, 0, 1)")
    return K().Model(i, x, name="lstm_sequences_out"), {"notes": [
        note + ": the outputs differ between Keras 2 and Keras 3 dialects for the same weights"]}


def b_gru_reset_after():
    l = L()
    i = K().Input((5, 3), name="input")
    x = l.GRU(4, name="gru")(i)
    x = l.Dense(2, name="dense")(x)
    return K().Model(i, x, name="gru_reset_after"), {"notes": [
        "GRU with default options (reset_after=True: bias [2, 3*units], input and recurrent biases)"]}


def b_gru_default_variants():
    l = L()
    i = K().Input((5, 3), name="input")
    x = l.GRU(4, return_sequences=True, go_backwards=True, name="gru_backwards")(i)
    x = l.GRU(3, activation="relu", recurrent_activation="hard_sigmoid", name="gru_relu")(x)
    return K().Model(i, x, name="gru_default_variants"), {"notes": [
        "reset_after=True (default) with go_backwards + return_sequences (outputs in processing order), then relu/hard_sigmoid"]}


def b_bidirectional_gru_default():
    l = L()
    i = K().Input((5, 3), name="input")
    a = l.Bidirectional(l.GRU(3, return_sequences=True, name="gru_seq"), merge_mode="concat", name="bidi_concat")(i)
    b = l.Bidirectional(l.GRU(3, return_sequences=True, name="gru_ave"), merge_mode="ave", name="bidi_ave")(i)
    c = l.Bidirectional(l.GRU(2, name="gru_last"), merge_mode="mul", name="bidi_mul")(i)
    x = l.Concatenate(name="both")([a, b])
    x = l.Flatten(name="flat")(x)
    x = l.Concatenate(name="all")([x, c])
    return K().Model(i, x, name="bidirectional_gru_default"), {"notes": [
        "Bidirectional GRU with reset_after=True (default): concat and ave with sequences, mul on the last step"]}


def b_recurrent_backwards_sequences():
    l = L()
    i = K().Input((5, 3), name="input")
    a = l.LSTM(3, return_sequences=True, go_backwards=True, name="lstm_back")(i)
    b = l.SimpleRNN(3, return_sequences=True, go_backwards=True, name="rnn_back")(i)
    c = l.GRU(3, return_sequences=True, go_backwards=True, reset_after=False, name="gru_back")(i)
    d = l.Bidirectional(l.GRU(2, return_sequences=True, reset_after=False, name="gru_bi"), merge_mode="sum", name="bidi_gru")(i)
    e = l.Bidirectional(l.SimpleRNN(2, return_sequences=True, name="rnn_bi"), merge_mode="concat", name="bidi_rnn")(i)
    x = l.Concatenate(name="all")([a, b, c, d, e])
    return K().Model(i, x, name="recurrent_backwards_sequences"), {"notes": [
        "go_backwards with return_sequences (processing order) for LSTM, SimpleRNN and GRU(reset_after=False); "
        "Bidirectional GRU(reset_after=False) and SimpleRNN with sequences"]}


def b_gru_reset_before():
    l = L()
    i = K().Input((5, 3), name="input")
    x = l.GRU(4, reset_after=False, return_sequences=True, name="gru")(i)
    return K().Model(i, x, name="gru_reset_before"), {"notes": [
        "reset_after=False: one bias [3*units]; reset gate applied before the recurrent matmul"]}


def b_simple_rnn():
    l = L()
    i = K().Input((5, 3), name="input")
    x = l.SimpleRNN(4, return_sequences=True, activation="tanh", name="rnn_tanh")(i)
    x = l.SimpleRNN(3, activation="relu", name="rnn_relu")(x)
    return K().Model(i, x, name="simple_rnn"), {}


def b_bidirectional_modes():
    l = L()
    i = K().Input((5, 3), name="input")
    branches = [l.Bidirectional(l.LSTM(2, return_sequences=True, name=f"lstm_{m}"), merge_mode=m,
                                name=f"bidi_{m}")(i) for m in ("concat", "sum", "mul", "ave")]
    x = l.Concatenate(name="concat")(branches)
    return K().Model(i, x, name="bidirectional_modes"), {"notes": [
        "channel blocks of the output: concat [0:4] (forward 0:2, backward 2:4), sum [4:6], mul [6:8], ave [8:10]",
        "the backward sequences are re-reversed before merging (time step t of both directions aligned)",
        bidi_note()]}


def b_bidirectional_gru_last():
    l = L()
    i = K().Input((5, 3), name="input")
    x = l.Bidirectional(l.GRU(3, reset_after=False, name="gru"), merge_mode="sum", name="bidi_gru")(i)
    return K().Model(i, x, name="bidirectional_gru_last"), {"notes": [
        "return_sequences False: forward state after the last step + backward state after the first step",
        bidi_note()]}


def b_conv1d_variants():
    l = L()
    i = K().Input((12, 4), name="input")
    x = l.Conv1D(5, 3, padding="same", name="conv_same")(i)  # 12x5
    x = l.Conv1D(4, 3, padding="valid", dilation_rate=2, name="conv_valid_dilated2")(x)  # 8x4
    x = l.Conv1D(3, 2, padding="causal", strides=1, name="conv_causal")(x)  # 8x3
    return K().Model(i, x, name="conv1d_variants"), {"notes": [
        "shapes: 12x4 -> same 12x5 -> valid dilation 2 8x4 -> causal (left pad 1) 8x3"]}


def b_pooling1d():
    l = L()
    i = K().Input((12, 3), name="input")
    x = l.MaxPooling1D(2, name="maxpool2")(i)  # 6x3
    x = l.AveragePooling1D(3, strides=1, padding="same", name="avgpool3_s1_same")(x)  # 6x3
    a = l.GlobalAveragePooling1D(name="gap")(x)
    b = l.GlobalMaxPooling1D(name="gmp")(x)
    return K().Model(i, [a, b], name="pooling1d"), {"notes": [
        "AveragePooling1D padding=same averages only the valid (unpadded) cells"]}


def b_sequence_reshape():
    l = L()
    i = K().Input((8, 3), name="input")
    x = l.ZeroPadding1D((1, 2), name="zeropad")(i)  # 11x3
    x = l.Cropping1D((2, 1), name="crop")(x)  # 8x3
    x = l.UpSampling1D(2, name="upsample")(x)  # 16x3
    return K().Model(i, x, name="sequence_reshape"), {"notes": [
        "shapes: 8x3 -> pad (1, 2) 11x3 -> crop (2, 1) 8x3 -> upsample 2 (repeat each step) 16x3"]}


def b_repeat_vector():
    l = L()
    i = K().Input((4,), name="input")
    x = l.Dense(3, name="dense")(i)
    x = l.RepeatVector(5, name="repeat")(x)
    return K().Model(i, x, name="repeat_vector"), {}


def b_time_distributed():
    l = L()
    i = K().Input((3, 6, 6, 2), name="input")
    x = l.TimeDistributed(l.Conv2D(3, 3, name="conv"), name="td_conv")(i)  # 3x4x4x3
    x = l.TimeDistributed(l.Flatten(name="flatten"), name="td_flatten")(x)  # 3x48
    x = l.TimeDistributed(l.Dense(2, name="dense"), name="td_dense")(x)  # 3x2
    return K().Model(i, x, name="time_distributed"), {"notes": [
        "shapes: 3x6x6x2 -> td conv 3x4x4x3 -> td flatten 3x48 -> td dense 3x2; "
        "the wrapped layers' weights are stored under the TimeDistributed layer", td_note()]}


def b_time_distributed_pooling():
    l = L()
    i = K().Input((3, 5, 5, 2), name="input")
    x = l.TimeDistributed(l.Conv2D(4, 3, padding="same", name="conv"), name="td_conv")(i)
    x = l.TimeDistributed(l.MaxPooling2D(2, name="pool"), name="td_pool")(x)
    x = l.TimeDistributed(l.GlobalAveragePooling2D(name="gap"), name="td_gap")(x)
    x = l.LSTM(3, name="lstm")(x)
    return K().Model(i, x, name="time_distributed_pooling"), {"notes": [
        "a small video-style model: per-frame convolution and pooling (global pooling drops H and W), then an LSTM"]}


def b_masking_noop():
    l = L()
    i = K().Input((5, 3), name="input")
    x = l.Masking(mask_value=0.0, name="masking")(i)
    x = l.Dense(2, name="dense")(x)
    return K().Model(i, x, name="masking_noop"), {"notes": [
        "no input timestep is all zeros, so the mask is all true and Masking is the identity here"]}


def b_dense_rank3_4():
    l = L()
    i = K().Input((4, 5), name="input")
    x = l.Dense(3, name="dense")(i)
    return K().Model(i, x, name="dense_rank3_4"), {"notes": ["Dense on a rank-3 tensor [batch, 4, 5]"]}


def b_dense_rank4():
    l = L()
    i = K().Input((3, 4, 5), name="input")
    x = l.Dense(2, name="dense")(i)
    return K().Model(i, x, name="dense_rank4"), {"notes": ["Dense on a rank-4 tensor [batch, 3, 4, 5]"]}


def b_flatten_rank3():
    l = L()
    i = K().Input((4, 5), name="input")
    x = l.Flatten(name="flatten")(i)
    x = l.Dense(2, name="dense")(x)
    return K().Model(i, x, name="flatten_rank3"), {}


def b_reshape_sequence_image():
    l = L()
    i = K().Input((12, 1), name="input")
    x = l.Reshape((2, 3, 2), name="reshape")(i)
    x = l.Conv2D(2, 2, name="conv")(x)  # 1x2x2
    return K().Model(i, x, name="reshape_sequence_image"), {"notes": [
        "a [T, C] sequence reshaped to [H, W, C]: Keras keeps the row-major element order (t, c) -> (h, w, c)"]}


def b_reshape_ranks():
    l = L()
    i = K().Input((12, 2), name="input")
    a = l.Dense(3, name="dense_a")(l.Reshape((24,), name="to_vector")(i))
    b = l.Conv1D(2, 2, name="conv_b")(l.Reshape((8, 3), name="to_sequence")(i))
    c = l.Conv2D(2, 2, name="conv_c")(l.Reshape((2, 3, 4), name="to_image")(i))
    d = l.Conv2D(4, 1, name="conv_d")(l.Reshape((2, 3, 4), name="to_image_d")(i))
    d = l.Conv1D(2, 2, name="conv1d_d")(l.Reshape((6, 4), name="image_to_sequence")(d))
    e = l.Dense(24, name="dense_e")(l.Flatten(name="flatten_e")(i))
    e = l.Conv1D(2, 2, name="conv1d_e")(l.Reshape((4, 6), name="vector_to_sequence")(e))
    return K().Model(i, [a, b, c, d, e], name="reshape_ranks"), {"notes": [
        "Reshape between ranks 2 ([T, C]), 3 ([H, W, C]) and 1 ([D]), each followed by a layer that reads the element order"]}


def b_flatten_rank5():
    l = L()
    i = K().Input((3, 2, 2, 2), name="input")
    x = l.Flatten(name="flatten")(i)
    x = l.Dense(2, name="dense")(x)
    return K().Model(i, x, name="flatten_rank5"), {"notes": ["Flatten of a [T, H, W, C] tensor (rank 5 with the batch)"]}


def b_conv2d_transpose():
    l = L()
    i = K().Input((5, 5, 3), name="input")
    x = l.Conv2DTranspose(4, 3, strides=2, padding="same", name="deconv_s2_same")(i)  # 10x10x4
    x = l.Conv2DTranspose(2, 3, strides=1, padding="valid", name="deconv_s1_valid")(x)  # 12x12x2
    return K().Model(i, x, name="conv2d_transpose"), {"notes": [
        "shapes: 5x5x3 -> same s2 10x10x4 -> valid s1 12x12x2; kernel [kh, kw, out, in]"]}


def b_conv2d_transpose_output_padding():
    l = L()
    i = K().Input((5, 5, 3), name="input")
    x = l.Conv2DTranspose(2, 3, strides=2, padding="valid", output_padding=1, name="deconv_outpad")(i)
    return K().Model(i, x, name="conv2d_transpose_output_padding"), {"notes": [
        "shape: (5-1)*2 + 3 + output_padding 1 = 12 -> 12x12x2"]}


def b_layer_norm():
    l = L()
    i = K().Input((4, 6), name="input")
    x = l.LayerNormalization(name="layer_norm")(i)
    x = l.Dense(2, name="dense")(x)
    return K().Model(i, x, name="layer_norm"), {"notes": [
        "normalizes over the last axis (6), epsilon 1e-3",
        "config axis: Keras 2 writes the resolved positive axis [2], Keras 3 writes [-1] (and rms_scaling false)"]}


def b_layer_norm_image():
    l = L()
    i = K().Input((3, 3, 4), name="input")
    x = l.LayerNormalization(axis=-1, name="layer_norm")(i)
    return K().Model(i, x, name="layer_norm_image"), {"notes": [
        "per pixel over the 4 channels; config axis: Keras 2 [3], Keras 3 [-1]"]}


def b_unit_norm():
    need("UnitNormalization")
    l = L()
    i = K().Input((6,), name="input")
    x = l.UnitNormalization(name="unit_norm")(i)
    x = l.Dense(2, name="dense")(x)
    return K().Model(i, x, name="unit_norm"), {"notes": [
        "UnitNormalization: x / sqrt(max(sum(x**2), 1e-12)) over the last axis",
        "config axis: tf.keras 2.15 writes [1] (list, resolved), tf_keras 2.21 and Keras 3 write -1 (int)"]}


def b_unit_norm_image():
    need("UnitNormalization")
    l = L()
    i = K().Input((4, 4, 3), name="input")
    x = l.Conv2D(4, 1, name="conv")(i)
    x = l.UnitNormalization(name="unit_norm")(x)
    return K().Model(i, x, name="unit_norm_image"), {"notes": [
        "UnitNormalization over the channels of every pixel (Core ML's l2normalize would span C, H and W)"]}


def b_dot_normalize():
    l = L()
    a = K().Input((4,), name="a")
    b = K().Input((4,), name="b")
    cos = l.Dot(axes=1, normalize=True, name="dot_cosine")([a, b])
    dot = l.Dot(axes=1, name="dot")([a, b])
    x = l.Concatenate(name="concat")([cos, dot])
    return K().Model([a, b], x, name="dot_normalize"), {"inputs": ["normal", "normal"], "notes": [
        "output [:, 0] = cosine similarity (l2-normalized inputs), [:, 1] = plain dot product"]}


PIXEL_NOTE = ("inputs/0 and pixels/0 hold integer pixel values 0..255 (RGB, channels last) as float32; "
              "the model does its own scaling")


def b_rescaling_image():
    need("Rescaling")
    l = L()
    i = K().Input((8, 8, 3), name="image")
    x = l.Rescaling(1 / 127.5, offset=-1.0, name="rescaling")(i)
    x = l.Conv2D(2, 3, name="conv")(x)
    x = l.GlobalAveragePooling2D(name="gap")(x)
    x = l.Dense(3, activation="softmax", name="probabilities")(x)
    return K().Model(i, x, name="rescaling_image"), {"inputs": ["pixels"], "labels": ["a", "b", "c"], "notes": [
        PIXEL_NOTE, "Rescaling: y = x * (1/127.5) - 1, i.e. one Core ML image scale 1/127.5 and bias -1"]}


IMAGENET_MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
IMAGENET_VAR = [(0.229 * 255) ** 2, (0.224 * 255) ** 2, (0.225 * 255) ** 2]


def b_normalization_image():
    need("Normalization")
    l = L()
    i = K().Input((8, 8, 3), name="image")
    x = l.Normalization(mean=IMAGENET_MEAN, variance=IMAGENET_VAR, name="normalization")(i)
    x = l.Conv2D(2, 3, name="conv")(x)
    x = l.Flatten(name="flatten")(x)
    x = l.Dense(2, name="dense")(x)
    return K().Model(i, x, name="normalization_image"), {"inputs": ["pixels"], "notes": [
        PIXEL_NOTE, "Normalization: y = (x - mean) / sqrt(variance) per channel, mean = ImageNet mean*255, "
        "variance = (ImageNet std*255)**2: per-channel scales differ, so it is not one Core ML image scale"]}


def b_normalization_scalar():
    need("Normalization")
    l = L()
    i = K().Input((8, 8, 3), name="image")
    x = l.Normalization(mean=127.5, variance=127.5 ** 2, name="normalization")(i)
    x = l.Conv2D(2, 1, name="conv")(x)
    x = l.GlobalMaxPooling2D(name="gmp")(x)
    return K().Model(i, x, name="normalization_scalar"), {"inputs": ["pixels"], "notes": [
        PIXEL_NOTE, "Normalization with scalar mean 127.5 and variance 127.5**2: y = x / 127.5 - 1 for every channel"]}


def b_resizing_error():
    need("Resizing")
    l = L()
    i = K().Input((10, 10, 3), name="input")
    x = l.Resizing(6, 6, name="resizing")(i)
    x = l.Conv2D(2, 3, name="conv")(x)
    return K().Model(i, x, name="resizing_error"), {"notes": [
        "the converter must refuse it (Resizing, bilinear); reference written anyway"]}


def b_center_crop_error():
    need("CenterCrop")
    l = L()
    i = K().Input((10, 10, 3), name="input")
    x = l.CenterCrop(6, 6, name="center_crop")(i)
    x = l.Conv2D(2, 3, name="conv")(x)
    return K().Model(i, x, name="center_crop_error"), {"notes": [
        "the converter must refuse it (CenterCrop); reference written anyway"]}


def b_lambda_error():
    l = L()
    i = K().Input((4,), name="input")
    # compiled with a fixed file name so the marshaled bytecode in the config does not depend on this script
    times2 = eval(compile("lambda x: x * 2", "lambda_times2", "eval"))  # noqa: S307
    x = l.Lambda(times2, name="lambda_times2")(i)
    x = l.Dense(2, name="dense")(x)
    notes = ["the converter must refuse it (Lambda: marshaled Python bytecode, Python-version specific)"]
    if mf.is_keras3():
        notes.append("Keras 3 loads it only with safe_mode=False")
    return K().Model(i, x, name="lambda_error"), {"notes": notes}


def b_custom_layer():
    l = L()
    i = K().Input((4,), name="input")
    x = l.Dense(3, name="dense")(i)
    x = scale_shift_class()(shift=0.5, name="scale_shift")(x)
    return K().Model(i, x, name="custom_layer"), {
        "custom_layers": {"ScaleShift": {"formula": "y = x * scale + shift",
                                         "weights": {"scale": "[C] (C = last axis)"},
                                         "config": {"shift": "float (0.5 here)"}}},
        "notes": ["ScaleShift is defined in make_layer_fixtures.py and not registered: Keras loads the file only "
                  "with custom_objects={'ScaleShift': ...}; a converter sees class_name ScaleShift"]}


def keras3_only():
    if not mf.is_keras3():
        raise Skip("Keras 3 fixture: only Keras 3's hard_sigmoid has slope 1/6")


def b_gru_hard_sigmoid():
    keras3_only()
    l = L()
    i = K().Input((5, 3), name="input")
    x = l.GRU(4, reset_after=False, return_sequences=True, recurrent_activation="hard_sigmoid", name="gru_seq")(i)
    x = l.GRU(3, reset_after=False, recurrent_activation="hard_sigmoid", name="gru_last")(x)
    return K().Model(i, x, name="gru_hard_sigmoid"), {"notes": [
        "Keras 3 hard_sigmoid is relu6(x+3)/6 (slope 1/6, offset 0.5); GRU reset_after=False (Core ML gru semantics)"]}


def b_lstm_hard_sigmoid():
    keras3_only()
    l = L()
    i = K().Input((5, 3), name="input")
    x = l.Bidirectional(l.LSTM(3, return_sequences=True, recurrent_activation="hard_sigmoid", name="lstm"),
                        merge_mode="concat", name="bilstm")(i)
    x = l.LSTM(2, recurrent_activation="hard_sigmoid", name="lstm_last")(x)
    return K().Model(i, x, name="lstm_hard_sigmoid"), {"notes": [
        "Keras 3 hard_sigmoid is relu6(x+3)/6 (slope 1/6, offset 0.5)", bidi_note()]}


# Keras activations as the activations of recurrent layers (issue: each is written exactly, unrolled where
# Core ML's fused recurrent layers cannot compute it, or refused by name). One model per activation.
RECURRENT_ACTIVATIONS = ["exponential", "hard_silu", "gelu", "selu", "softsign", "softplus", "elu", "relu6"]


def recurrent_activation_builder(act):
    def build():
        try:
            K().activations.get(act)
        except (ValueError, TypeError) as error:
            raise Skip(f"activation {act!r} does not exist in Keras {mf.KERAS_VERSION}: {error}")
        l = L()
        i = K().Input((4, 3), name="input")
        a = l.LSTM(3, recurrent_activation=act, name="lstm_forward")(i)
        # exp as the output activation of an LSTM or GRU compounds over the steps (exp of a growing cell
        # state) and overflows float32 within four steps; there it is the gate activation only.
        out = "tanh" if act == "exponential" else act
        b = l.LSTM(3, recurrent_activation=act, activation=out, go_backwards=True, name="lstm_backward")(i)
        c = l.GRU(3, recurrent_activation=act, go_backwards=True, return_sequences=True, name="gru_backward_seq")(i)
        d = l.GRU(2, recurrent_activation=act, activation=out, reset_after=False, name="gru_reset_before")(i)
        e = l.SimpleRNN(3, activation=act, go_backwards=True, name="rnn_backward")(i)
        f = l.Bidirectional(l.LSTM(2, recurrent_activation=act, return_sequences=True, name="lstm_bi"),
                            merge_mode="concat", name="bidi_lstm")(i)
        g = l.Bidirectional(l.GRU(2, recurrent_activation=act, name="gru_bi"), merge_mode="sum", name="bidi_gru")(i)
        x = l.Concatenate(name="last_steps")([a, b, d, e, g])
        sequences = l.Flatten(name="sequences")(l.Concatenate(name="sequence_steps")([c, f]))
        x = l.Concatenate(name="all")([x, sequences])
        return K().Model(i, x, name=f"recurrent_{act}"), {"notes": [
            f"{act} as recurrent_activation (LSTM forward and go_backwards, GRU go_backwards with sequences, GRU "
            f"reset_after=False, Bidirectional LSTM with sequences and GRU last step) and as the output activation "
            f"(lstm_backward, gru_reset_before, SimpleRNN go_backwards)",
            "weights scaled by 0.4 after the seeded randomization: unbounded gates (exp) keep the outputs moderate",
            "for exponential, lstm_backward and gru_reset_before keep tanh as their output activation",
            bidi_note()], "weight_scale": 0.4, "finite_outputs": True}
    return build


MODELS = [
    ("text_bilstm", b_text_bilstm),
    ("conv1d_gru", b_conv1d_gru),
    ("lstm_variants", b_lstm_variants),
    ("lstm_sequences_out", b_lstm_sequences_out),
    ("gru_reset_after", b_gru_reset_after),
    ("gru_reset_before", b_gru_reset_before),
    ("gru_default_variants", b_gru_default_variants),
    ("bidirectional_gru_default", b_bidirectional_gru_default),
    ("recurrent_backwards_sequences", b_recurrent_backwards_sequences),
    ("simple_rnn", b_simple_rnn),
    ("bidirectional_modes", b_bidirectional_modes),
    ("bidirectional_gru_last", b_bidirectional_gru_last),
    ("conv1d_variants", b_conv1d_variants),
    ("pooling1d", b_pooling1d),
    ("sequence_reshape", b_sequence_reshape),
    ("repeat_vector", b_repeat_vector),
    ("time_distributed", b_time_distributed),
    ("time_distributed_pooling", b_time_distributed_pooling),
    ("masking_noop", b_masking_noop),
    ("dense_rank3_4", b_dense_rank3_4),
    ("dense_rank4", b_dense_rank4),
    ("flatten_rank3", b_flatten_rank3),
    ("reshape_sequence_image", b_reshape_sequence_image),
    ("reshape_ranks", b_reshape_ranks),
    ("flatten_rank5", b_flatten_rank5),
    ("conv2d_transpose", b_conv2d_transpose),
    ("conv2d_transpose_output_padding", b_conv2d_transpose_output_padding),
    ("layer_norm", b_layer_norm),
    ("layer_norm_image", b_layer_norm_image),
    ("unit_norm", b_unit_norm),
    ("unit_norm_image", b_unit_norm_image),
    ("dot_normalize", b_dot_normalize),
    ("rescaling_image", b_rescaling_image),
    ("normalization_image", b_normalization_image),
    ("normalization_scalar", b_normalization_scalar),
    ("resizing_error", b_resizing_error),
    ("center_crop_error", b_center_crop_error),
    ("lambda_error", b_lambda_error),
    ("custom_layer", b_custom_layer),
    ("gru_hard_sigmoid", b_gru_hard_sigmoid),
    ("lstm_hard_sigmoid", b_lstm_hard_sigmoid),
] + [(f"recurrent_{act}", recurrent_activation_builder(act)) for act in RECURRENT_ACTIVATIONS]


# --------------------------------------------------------------------------------------------------
# inputs, layer classes, weight tables


def make_inputs(model, name, kinds):
    """3 seeded samples per input: normal(0, 1), token ids (int32) or 0..255 pixel values (float32)."""
    rng = np.random.default_rng(mf.seed_of(name, "inputs"))
    xs = []
    for t, kind in zip(model.inputs, kinds):
        shape = [mf.N_SAMPLES] + mf.shape_list(t)[1:]
        if kind == "normal":
            xs.append(rng.normal(0.0, 1.0, shape).astype(np.float32))
        elif kind == "pixels":
            xs.append(rng.integers(0, 256, shape).astype(np.float32))
        elif kind[0] == "tokens":
            xs.append(rng.integers(0, kind[1], shape).astype(np.int32))
        else:
            raise ValueError(kind)
    return xs


def wrapped_layers(layer):
    """Layers held by wrappers (Bidirectional's forward/backward, TimeDistributed's layer)."""
    inner = []
    for attr in ("forward_layer", "backward_layer", "layer"):
        sub = getattr(layer, attr, None)
        if sub is not None and isinstance(sub, mf.K.layers.Layer) and all(sub is not x for x in inner):
            inner.append(sub)
    return inner


def layer_classes(model):
    names = set(mf.all_layer_classes(model))
    for layer in mf.iter_layers(model):
        for sub in wrapped_layers(layer):
            names.add(sub.__class__.__name__)
    return sorted(names)


def _decode(values):
    return [v.decode("utf8") if isinstance(v, bytes) else str(v) for v in np.asarray(values).reshape(-1)]


def _names_attr(group, key):
    """A names attribute, joining Keras' split chunks (`key0`, `key1`, ...) if any."""
    if key in group.attrs:
        return _decode(group.attrs[key])
    out, n = [], 0
    while f"{key}{n}" in group.attrs:
        out += _decode(group.attrs[f"{key}{n}"])
        n += 1
    return out


def weight_table(path):
    """{layer: [[weight name, shape], ...]} for every layer with weights, as stored in `model_weights`."""
    table = {}
    with h5py.File(path, "r") as f:
        g = f["model_weights"]
        for layer in _names_attr(g, "layer_names"):
            names = _names_attr(g[layer], "weight_names")
            if names:
                table[layer] = [[n, list(g[layer][n].shape)] for n in names]
    return table


# --------------------------------------------------------------------------------------------------
# manifest


def load_manifest(out):
    p = os.path.join(out, "manifest.json")
    if os.path.exists(p):
        with open(p) as f:
            return json.load(f)
    return {}


def normalize_manifest(manifest):
    m = {"description": "Layer fixtures made by Samples/make_layer_fixtures.py (see its docstring and "
                        "Samples/README.md). Paths are relative to this folder; shapes include the batch dimension "
                        "(null). integer_inputs: indices of inputs holding integer token ids (stored as float32 in "
                        "the reference); pixel_inputs: indices of inputs holding 0..255 pixel values (also in the "
                        "reference as pixels/<i>). weights: per layer, [weight name, shape] as stored in "
                        "model_weights, in weight_names order.",
         "fixtures": manifest.get("fixtures", []),
         "skipped": manifest.get("skipped", [])}
    return m


def write_manifest(out, manifest):
    manifest["skipped"].sort(key=lambda e: (e["dialect"], e["model"]))
    mf.write_manifest(out, manifest)  # sorts fixtures by dialect and path, compacts number lists
    # also keep each [weight name, shape] pair on one line
    p = os.path.join(out, "manifest.json")
    with open(p) as f:
        text = f.read()
    text = re.sub(r'\[\s*("[^"\n]*"),\s*(\[[^\[\]\n]*\])\s*\]', r"[\1, \2]", text)
    with open(p, "w") as f:
        f.write(text)


def manifest_entry(rel_path, model, info, path):
    e = mf.manifest_entry(rel_path, mf.DIALECT, mf.KERAS_VERSION, model, info)
    e["layer_classes"] = layer_classes(model)
    kinds = info.get("inputs") or ["normal"] * len(model.inputs)
    e["integer_inputs"] = [i for i, k in enumerate(kinds) if isinstance(k, tuple) and k[0] == "tokens"]
    e["pixel_inputs"] = [i for i, k in enumerate(kinds) if k == "pixels"]
    for i, k in enumerate(kinds):
        if isinstance(k, tuple):
            e["inputs"][i]["token_range"] = [0, k[1]]
    if info.get("custom_layers"):
        e["custom_layers"] = info["custom_layers"]
    e["weights"] = weight_table(path)
    return e


# --------------------------------------------------------------------------------------------------
# generation and checks


def load_keras_model(path):
    kwargs = {"compile": False, "custom_objects": custom_objects()}
    if mf.is_keras3():
        kwargs["safe_mode"] = False  # lambda_error
    return mf.K.models.load_model(path, **kwargs)


def read_reference(path):
    with h5py.File(path, "r") as f:
        xs = [f["inputs"][str(i)][()] for i in range(len(f["inputs"]))]
        ys = [f["outputs"][str(i)][()] for i in range(len(f["outputs"]))]
    return xs, ys


def check_file(path, integer_inputs):
    """Reload `path` with the current Keras and compare its outputs with the reference file."""
    model = load_keras_model(path)
    xs, ys = read_reference(path[:-3] + ".reference.h5")
    xs = [x.astype(np.int32) if i in integer_inputs else x for i, x in enumerate(xs)]
    got = mf.predict(model, xs)
    assert len(got) == len(ys), (path, len(got), len(ys))
    for a, b in zip(got, ys):
        assert a.shape == b.shape, (path, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=path)


def build_one(name, builder, folder):
    mf.reset()
    model, info = builder()
    mf.randomize_weights(model, name)
    if info.get("weight_scale"):
        # Gates such as exp(z) grow the state without bound: smaller weights keep the reference outputs finite
        # and of moderate size, so they measure the activation, not float32 overflow.
        for layer in mf.leaf_layers_with_weights(model):
            layer.set_weights([w * info["weight_scale"] for w in layer.get_weights()])
    kinds = info.get("inputs") or ["normal"] * len(model.inputs)
    xs = make_inputs(model, name, kinds)
    if info.get("finite_outputs"):
        outputs = mf.predict(model, xs)
        assert all(np.isfinite(o).all() and np.abs(o).max() < 1e4 for o in outputs), f"{name}: outputs overflow"
    if name == "masking_noop":
        assert not np.any(np.all(xs[0] == 0.0, axis=-1)), "masking_noop input has an all-zero timestep"
    path = os.path.join(folder, name + ".h5")
    mf.save_model(model, path)
    extra = {f"pixels/{i}": xs[i].astype(np.float32) for i, k in enumerate(kinds) if k == "pixels"}
    labels = info.get("labels")
    _, unmapped = mf.write_reference(path[:-3] + ".reference.h5", model, xs, mf.DIALECT, mf.KERAS_VERSION,
                                     labels, extra)
    if labels:
        with open(path[:-3] + ".labels.txt", "w") as f:
            f.write("\n".join(labels) + "\n")
    if unmapped:
        info.setdefault("notes", []).append("weights not in coreml_weights (no make_fixtures mapping): "
                                            + ", ".join(sorted(set(unmapped))))
    return model, info, path


def model_name(entry_path):
    return os.path.basename(entry_path)[:-3]


def run_dialect(dialect, out, check_only=False, only=None):
    """Write (or with check_only, just check) the dialect's fixtures; `only`: a subset of model names."""
    mf.import_dialect(dialect)
    folder = os.path.join(out, dialect)
    os.makedirs(folder, exist_ok=True)
    if check_only:
        entries = [e for e in load_manifest(out).get("fixtures", []) if e["dialect"] == dialect
                   and (only is None or model_name(e["path"]) in only)]
        for e in entries:
            check_file(os.path.join(out, e["path"]), e.get("integer_inputs", []))
        print(f"  {len(entries)} {dialect} fixtures reload and match their references")
        return
    manifest = normalize_manifest(load_manifest(out))

    def replaced(dialect_of_entry, name):
        return dialect_of_entry == dialect and (only is None or name in only)

    manifest["fixtures"] = [e for e in manifest["fixtures"] if not replaced(e["dialect"], model_name(e["path"]))]
    manifest["skipped"] = [e for e in manifest["skipped"] if not replaced(e["dialect"], e["model"])]
    for name, builder in MODELS:
        if only is not None and name not in only:
            continue
        for stale in (".h5", ".reference.h5", ".labels.txt"):
            if os.path.exists(os.path.join(folder, name + stale)):
                os.remove(os.path.join(folder, name + stale))
        try:
            model, info, path = build_one(name, builder, folder)
        except Skip as e:
            manifest["skipped"].append({"dialect": dialect, "model": name, "reason": str(e)})
            print(f"  skipped {name}: {e}")
            continue
        entry = manifest_entry(f"{dialect}/{name}.h5", model, info, path)
        check_file(path, entry["integer_inputs"])
        manifest["fixtures"].append(entry)
        print(f"  {dialect}/{name}.h5 ok ({os.path.getsize(path)} + "
              f"{os.path.getsize(path[:-3] + '.reference.h5')} bytes)")
    write_manifest(out, manifest)


# --------------------------------------------------------------------------------------------------
# Keras 1.2 files written by hand


def _k1_layer(cls, cfg):
    return {"class_name": cls, "config": cfg}


def _k1_base(name, first_shape=None, input_dtype="float32"):
    """Keras 1 Layer.get_config: name, trainable, and for the first layer batch_input_shape and input_dtype."""
    cfg = {"name": name, "trainable": True}
    if first_shape is not None:
        cfg["batch_input_shape"] = first_shape
        cfg["input_dtype"] = input_dtype
    return cfg


def _k1_conv(name, layer, atrous=False, first_shape=None, output_shape=None):
    kh, kw = layer.kernel_size
    cfg = _k1_base(name, first_shape)
    cfg.update({"nb_filter": layer.filters, "nb_row": kh, "nb_col": kw, "init": "glorot_uniform",
                "activation": layer.activation.__name__, "border_mode": layer.padding,
                "subsample": list(layer.strides), "dim_ordering": "tf", "W_regularizer": None,
                "b_regularizer": None, "activity_regularizer": None, "W_constraint": None, "b_constraint": None,
                "bias": bool(layer.use_bias)})
    if atrous:
        cfg["atrous_rate"] = list(layer.dilation_rate)
    if output_shape is not None:  # Deconvolution2D
        cfg["output_shape"] = output_shape
    return cfg


def _k1_dense(name, layer, input_dim=None):
    return {"name": name, "trainable": True, "output_dim": layer.units, "init": "glorot_uniform",
            "activation": layer.activation.__name__, "W_regularizer": None, "b_regularizer": None,
            "activity_regularizer": None, "W_constraint": None, "b_constraint": None,
            "bias": bool(layer.use_bias), "input_dim": input_dim}


def _k1_merge(name, mode, concat_axis=-1):
    return {"name": name, "mode": mode, "mode_type": "raw", "concat_axis": concat_axis, "dot_axes": -1,
            "output_shape": None, "output_shape_type": "raw", "output_mask": None, "output_mask_type": "raw",
            "arguments": {}}


def _k1_embedding(name, layer, input_length):
    cfg = _k1_base(name, [None, input_length], "int32")
    cfg.update({"input_dim": layer.input_dim, "output_dim": layer.output_dim, "init": "uniform",
                "input_length": input_length, "mask_zero": False, "activity_regularizer": None,
                "W_regularizer": None, "W_constraint": None, "dropout": 0.0})
    return cfg


def _k1_recurrent(name, layer, input_dim, first_shape=None):
    """Keras 1.2 SimpleRNN / GRU / LSTM config (Recurrent base keys + the cell's own keys)."""
    cfg = _k1_base(name, first_shape)
    cls = layer.__class__.__name__
    cfg.update({"output_dim": layer.units, "init": "glorot_uniform", "inner_init": "orthogonal"})
    if cls == "LSTM":
        cfg["forget_bias_init"] = "one"
    cfg["activation"] = layer.activation.__name__
    if cls in ("LSTM", "GRU"):
        cfg["inner_activation"] = layer.recurrent_activation.__name__
    cfg.update({"W_regularizer": None, "U_regularizer": None, "b_regularizer": None,
                "dropout_W": 0.0, "dropout_U": 0.0,
                "return_sequences": bool(layer.return_sequences), "go_backwards": bool(layer.go_backwards),
                "stateful": bool(layer.stateful), "unroll": bool(layer.unroll), "consume_less": "cpu",
                # not stateful: Keras 1 writes input_dim (set by build) and input_length (null unless passed)
                "input_dim": input_dim, "input_length": None})
    return cfg


def _k1_batchnorm(name, layer):
    cfg = _k1_base(name)
    cfg.update({"epsilon": float(layer.epsilon), "mode": 0, "axis": -1, "gamma_regularizer": None,
                "beta_regularizer": None, "momentum": float(layer.momentum)})
    return cfg


def _k1_sequential(model, config):
    layer_names = [e["config"]["name"] for e in config]
    return model, {"class_name": "Sequential", "config": config, "keras_version": KERAS1_VERSION}, layer_names


def keras1_sequential():
    """tf.keras model equivalent to the Keras 1 Sequential, and its Keras 1 JSON."""
    l = L()
    i = K().Input((12, 12, 3), name="convolution2d_1_input")
    c1 = l.Conv2D(4, 3, padding="same", activation="relu", name="convolution2d_1")
    p1 = l.MaxPooling2D((2, 2), name="maxpooling2d_1")
    a1 = l.Conv2D(3, 3, dilation_rate=2, padding="valid", name="atrousconvolution2d_1")
    f1 = l.Flatten(name="flatten_1")
    d1 = l.Dense(2, name="dense_1")
    model = K().Model(i, d1(f1(a1(p1(c1(i))))), name="sequential_1")
    config = [
        _k1_layer("Convolution2D", _k1_conv("convolution2d_1", c1, first_shape=[None, 12, 12, 3])),
        _k1_layer("MaxPooling2D", {"name": "maxpooling2d_1", "trainable": True, "pool_size": [2, 2],
                                   "strides": [2, 2], "border_mode": "valid", "dim_ordering": "tf"}),
        _k1_layer("AtrousConvolution2D", _k1_conv("atrousconvolution2d_1", a1, atrous=True)),
        _k1_layer("Flatten", {"name": "flatten_1", "trainable": True}),
        _k1_layer("Dense", _k1_dense("dense_1", d1)),
    ]
    return _k1_sequential(model, config)


def keras1_merge():
    """tf.keras model equivalent to the Keras 1 functional Model with Merge layers, and its Keras 1 JSON."""
    l = L()
    i = K().Input((6,), name="input_1")
    d1 = l.Dense(4, activation="relu", name="dense_1")
    d2 = l.Dense(4, activation="tanh", name="dense_2")
    a, b = d1(i), d2(i)
    s = l.Add(name="merge_1")([a, b])
    c = l.Concatenate(axis=-1, name="merge_2")([s, a])
    d3 = l.Dense(2, name="dense_3")
    model = K().Model(i, d3(c), name="model_1")

    def node(cls, cfg, *inbound):
        return {"class_name": cls, "config": cfg, "name": cfg["name"],
                "inbound_nodes": [[[n, 0, 0] for n in inbound]] if inbound else []}

    layers = [
        node("InputLayer", {"batch_input_shape": [None, 6], "input_dtype": "float32", "sparse": False,
                            "name": "input_1"}),
        node("Dense", _k1_dense("dense_1", d1), "input_1"),
        node("Dense", _k1_dense("dense_2", d2), "input_1"),
        node("Merge", _k1_merge("merge_1", "sum"), "dense_1", "dense_2"),
        node("Merge", _k1_merge("merge_2", "concat", -1), "merge_1", "dense_1"),
        node("Dense", _k1_dense("dense_3", d3), "merge_2"),
    ]
    config = {"name": "model_1", "layers": layers, "input_layers": [["input_1", 0, 0]],
              "output_layers": [["dense_3", 0, 0]]}
    layer_names = [e["name"] for e in layers]
    return model, {"class_name": "Model", "config": config, "keras_version": KERAS1_VERSION}, layer_names


def keras1_lstm():
    """Embedding(15, 5, input_length=6) -> LSTM(4) (hard_sigmoid gates) -> Dense(3, softmax), Keras 1 names."""
    l = L()
    i = K().Input((6,), dtype="int32", name="embedding_1_input")
    e1 = l.Embedding(15, 5, name="embedding_1")
    r1 = l.LSTM(4, activation="tanh", recurrent_activation="hard_sigmoid", return_sequences=False,
                name="lstm_1")
    d1 = l.Dense(3, activation="softmax", name="dense_1")
    model = K().Model(i, d1(r1(e1(i))), name="sequential_1")
    config = [
        _k1_layer("Embedding", _k1_embedding("embedding_1", e1, 6)),
        _k1_layer("LSTM", _k1_recurrent("lstm_1", r1, input_dim=5)),
        _k1_layer("Dense", _k1_dense("dense_1", d1)),
    ]
    return _k1_sequential(model, config)


def keras1_gru_rnn():
    """Input (5, 3) -> GRU(4, return_sequences) (Keras 1 = reset_after False) -> SimpleRNN(3) -> Dense(2)."""
    l = L()
    i = K().Input((5, 3), name="gru_1_input")
    g1 = l.GRU(4, activation="tanh", recurrent_activation="hard_sigmoid", reset_after=False,
               return_sequences=True, name="gru_1")
    s1 = l.SimpleRNN(3, activation="tanh", name="simplernn_1")
    d1 = l.Dense(2, name="dense_1")
    model = K().Model(i, d1(s1(g1(i))), name="sequential_1")
    config = [
        _k1_layer("GRU", _k1_recurrent("gru_1", g1, input_dim=3, first_shape=[None, 5, 3])),
        _k1_layer("SimpleRNN", _k1_recurrent("simplernn_1", s1, input_dim=4)),
        _k1_layer("Dense", _k1_dense("dense_1", d1)),
    ]
    return _k1_sequential(model, config)


def keras1_bn_deconv():
    """Input 6x6x2 -> Convolution2D(3, 3, 3, same) -> BatchNormalization(mode 0) -> Deconvolution2D(2, 3, 3,
    subsample 2, same, output_shape 12x12x2) -> Flatten -> Dense(2)."""
    l = L()
    i = K().Input((6, 6, 2), name="convolution2d_1_input")
    c1 = l.Conv2D(3, 3, padding="same", name="convolution2d_1")
    b1 = l.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.99, name="batchnormalization_1")
    t1 = l.Conv2DTranspose(2, 3, strides=2, padding="same", name="deconvolution2d_1")
    f1 = l.Flatten(name="flatten_1")
    d1 = l.Dense(2, name="dense_1")
    model = K().Model(i, d1(f1(t1(b1(c1(i))))), name="sequential_1")
    config = [
        _k1_layer("Convolution2D", _k1_conv("convolution2d_1", c1, first_shape=[None, 6, 6, 2])),
        _k1_layer("BatchNormalization", _k1_batchnorm("batchnormalization_1", b1)),
        _k1_layer("Deconvolution2D", _k1_conv("deconvolution2d_1", t1, output_shape=[None, 12, 12, 2])),
        _k1_layer("Flatten", {"name": "flatten_1", "trainable": True}),
        _k1_layer("Dense", _k1_dense("dense_1", d1)),
    ]
    return _k1_sequential(model, config)


KERAS1_MODELS = [
    ("keras1_sequential", keras1_sequential, ["normal"],
     ["Keras 1.2 Sequential: config is a list; input shape in the first layer's batch_input_shape"]),
    ("keras1_merge", keras1_merge, ["normal"],
     ["Keras 1.2 functional Model with Merge layers (mode sum and concat); merge_2 concatenates "
      "[merge_1, dense_1] on the last axis"]),
    ("keras1_lstm", keras1_lstm, [("tokens", 15)],
     ["inputs/0 holds integer token ids in [0, 15) stored as float32 (Keras 1 input_dtype int32)",
      "Keras 1.2 LSTM weights per gate in the order i, c, f, o: <layer>_W_g [in, units], <layer>_U_g "
      "[units, units], <layer>_b_g [units]; the Keras 2 kernel is concat(W_i, W_f, W_c, W_o) on the last axis "
      "(same for U and b)",
      "inner_activation hard_sigmoid = clip(0.2x+0.5, 0, 1), as tf.keras 2.15's"]),
    ("keras1_gru_rnn", keras1_gru_rnn, ["normal"],
     ["Keras 1.2 GRU weights per gate in the order z, r, h: <layer>_W_g, <layer>_U_g, <layer>_b_g; the Keras 2 "
      "kernel is concat(W_z, W_r, W_h); Keras 1's GRU is the reset_after=False formula (reset gate applied "
      "to h before the recurrent matmul); inner_activation hard_sigmoid",
      "SimpleRNN weights <layer>_W [in, units], <layer>_U [units, units], <layer>_b [units]"]),
    ("keras1_bn_deconv", keras1_bn_deconv, ["normal"],
     ["BatchNormalization mode 0: weights <layer>_gamma, _beta, _running_mean, _running_std; running_std holds "
      "the moving VARIANCE (Keras 1.2 TF backend: tf.nn.batch_normalization(x, mean, running_std, beta, gamma, "
      "epsilon)), so y = gamma * (x - mean) / sqrt(running_std + epsilon) + beta",
      "Deconvolution2D W is stored as Keras 1.2 stores it: the Convolution2D layout [nb_row, nb_col, "
      "input_channels, nb_filter] (= [3, 3, 3, 2] here), not tf.keras Conv2DTranspose's [kh, kw, out, in]; "
      "Keras 1's TF backend swaps the last two axes before tf.nn.conv2d_transpose (and Keras 2's loader "
      "transposes (0, 1, 3, 2)); no spatial flip",
      "Deconvolution2D output_shape [null, 12, 12, 2] (channels last) = Conv2DTranspose(2, 3, strides 2, same) on "
      "6x6"]),
]


def keras1_weights(layer):
    """[(suffix, array)] in the Keras 1.2 `weight_names` order for the tf.keras layer standing in for it."""
    cls = layer.__class__.__name__
    values = [] if isinstance(layer, mf.K.layers.InputLayer) else layer.get_weights()
    if cls in ("LSTM", "GRU"):
        kernel, recurrent, bias = values
        gates = {"LSTM": ("i", "f", "c", "o"), "GRU": ("z", "r", "h")}[cls]  # Keras 2 kernel column blocks
        order = {"LSTM": ("i", "c", "f", "o"), "GRU": ("z", "r", "h")}[cls]  # Keras 1 weight order
        assert bias.ndim == 1, "GRU must be reset_after=False (one bias vector)"
        u = layer.units
        out = []
        for g in order:
            k = gates.index(g)
            out += [(f"W_{g}", kernel[:, k * u:(k + 1) * u]), (f"U_{g}", recurrent[:, k * u:(k + 1) * u]),
                    (f"b_{g}", bias[k * u:(k + 1) * u])]
        return out
    if cls == "SimpleRNN":
        return list(zip(("W", "U", "b"), values))
    if cls == "BatchNormalization":
        return list(zip(("gamma", "beta", "running_mean", "running_std"), values))  # running_std = variance
    if cls == "Conv2DTranspose":
        # Keras 1.2 Deconvolution2D keeps Convolution2D's W [kh, kw, in, out]; Keras 2 has [kh, kw, out, in]
        return [("W", np.transpose(values[0], (0, 1, 3, 2)))] + list(zip(("b",), values[1:]))
    # Convolution2D, AtrousConvolution2D, Dense, Embedding
    return list(zip(("W", "b"), values))


def write_keras1_weights(path, model, layer_names):
    with h5py.File(path, "w") as f:
        mf._fixed_names(f, "layer_names", layer_names)
        for name in layer_names:
            g = f.create_group(name)
            named = [(f"{name}_{suffix}", v) for suffix, v in keras1_weights(model.get_layer(name))]
            mf._fixed_names(g, "weight_names", [n for n, _ in named])
            for n, v in named:
                g.create_dataset(n, data=np.ascontiguousarray(v, dtype=np.float32))


def _k1_to_keras2(cls, name, named):
    """Keras 2 weight list from a Keras 1 layer's {weight name: array} (names checked, order as written)."""
    prefix = name + "_"
    assert all(n.startswith(prefix) for n in named), (name, list(named))
    w = {n[len(prefix):]: v for n, v in named.items()}

    def take(*suffixes):
        assert list(w) == list(suffixes), (name, list(w), suffixes)
        return [w[s] for s in suffixes]

    if cls in ("LSTM", "GRU"):
        k1_order = {"LSTM": "icfo", "GRU": "zrh"}[cls]
        k2_order = {"LSTM": "ifco", "GRU": "zrh"}[cls]
        take(*[f"{p}_{g}" for g in k1_order for p in ("W", "U", "b")])
        return [np.concatenate([w[f"{p}_{g}"] for g in k2_order], axis=-1) for p in ("W", "U", "b")]
    if cls == "SimpleRNN":
        return take("W", "U", "b")
    if cls == "BatchNormalization":
        return take("gamma", "beta", "running_mean", "running_std")
    if cls == "Deconvolution2D":
        W, b = take("W", "b")
        return [np.transpose(W, (0, 1, 3, 2)), b]
    if cls == "Embedding":
        return take("W")
    return take(*("W", "b")[:len(w)])


def model_from_keras1(spec, weights_path):
    """Build a tf.keras model from Keras 1 JSON (the mapping in the docstring) and load the Keras 1 weights."""
    l = L()

    def make(cls, c):
        if cls in ("Convolution2D", "AtrousConvolution2D"):
            assert c["dim_ordering"] == "tf"
            return l.Conv2D(c["nb_filter"], (c["nb_row"], c["nb_col"]), strides=tuple(c["subsample"]),
                            padding=c["border_mode"], dilation_rate=tuple(c.get("atrous_rate", (1, 1))),
                            activation=c["activation"], use_bias=c["bias"], name=c["name"])
        if cls == "Deconvolution2D":
            assert c["dim_ordering"] == "tf"
            return l.Conv2DTranspose(c["nb_filter"], (c["nb_row"], c["nb_col"]), strides=tuple(c["subsample"]),
                                     padding=c["border_mode"], activation=c["activation"], use_bias=c["bias"],
                                     name=c["name"])
        if cls == "MaxPooling2D":
            return l.MaxPooling2D(tuple(c["pool_size"]), strides=tuple(c["strides"]), padding=c["border_mode"],
                                  name=c["name"])
        if cls == "Flatten":
            return l.Flatten(name=c["name"])
        if cls == "Dense":
            return l.Dense(c["output_dim"], activation=c["activation"], use_bias=c["bias"], name=c["name"])
        if cls == "Merge":
            return {"sum": lambda: l.Add(name=c["name"]),
                    "concat": lambda: l.Concatenate(axis=c["concat_axis"], name=c["name"])}[c["mode"]]()
        if cls == "Embedding":
            assert not c["mask_zero"]
            return l.Embedding(c["input_dim"], c["output_dim"], name=c["name"])
        if cls in ("LSTM", "GRU", "SimpleRNN"):
            assert c["consume_less"] in ("cpu", "mem"), "consume_less gpu stores concatenated W/U/b"
            kw = dict(activation=c["activation"], return_sequences=c["return_sequences"],
                      go_backwards=c["go_backwards"], stateful=c["stateful"], unroll=c["unroll"], name=c["name"])
            if cls == "LSTM":
                return l.LSTM(c["output_dim"], recurrent_activation=c["inner_activation"], **kw)
            if cls == "GRU":
                return l.GRU(c["output_dim"], recurrent_activation=c["inner_activation"], reset_after=False, **kw)
            return l.SimpleRNN(c["output_dim"], **kw)
        if cls == "BatchNormalization":
            assert c["mode"] == 0
            return l.BatchNormalization(axis=c["axis"], epsilon=c["epsilon"], momentum=c["momentum"],
                                        name=c["name"])
        raise ValueError(cls)

    def check_built(cls, c, layer):
        if cls in ("LSTM", "GRU", "SimpleRNN") and c.get("input_dim") is not None:
            assert layer.input_shape[-1] == c["input_dim"], (c["name"], layer.input_shape, c["input_dim"])
        if cls == "Deconvolution2D":
            assert list(layer.output_shape[1:]) == list(c["output_shape"][1:]), (layer.output_shape, c)

    classes = {}
    if spec["class_name"] == "Sequential":
        first = spec["config"][0]["config"]
        x = inp = K().Input(tuple(first["batch_input_shape"][1:]), dtype=first.get("input_dtype", "float32"),
                            name=first["name"] + "_input")
        for e in spec["config"]:
            layer = make(e["class_name"], e["config"])
            x = layer(x)
            check_built(e["class_name"], e["config"], layer)
            classes[e["config"]["name"]] = e["class_name"]
        model = K().Model(inp, x)
    else:
        tensors, inputs = {}, []
        for e in spec["config"]["layers"]:
            if e["class_name"] == "InputLayer":
                t = K().Input(tuple(e["config"]["batch_input_shape"][1:]), name=e["name"])
                inputs.append(t)
            else:
                args = [tensors[n[0]] for n in e["inbound_nodes"][0]]
                t = make(e["class_name"], e["config"])(args if len(args) > 1 else args[0])
            tensors[e["name"]] = t
            classes[e["name"]] = e["class_name"]
        model = K().Model(inputs, [tensors[o[0]] for o in spec["config"]["output_layers"]])
    with h5py.File(weights_path, "r") as f:
        for name in _decode(f.attrs["layer_names"]):
            wn = _decode(f[name].attrs["weight_names"]) if f[name].attrs["weight_names"].size else []
            if wn:
                named = {n: f[name][n][()] for n in wn}
                model.get_layer(name).set_weights(_k1_to_keras2(classes[name], name, named))
    return model


def check_keras1(base, integer_inputs):
    """Rebuild `<base>.json` + `<base>.h5` (Keras 1 files only) and compare with `<base>.reference.h5`."""
    with open(base + ".json") as f:
        spec = json.load(f)
    mf.reset()
    rebuilt = model_from_keras1(spec, base + ".h5")
    xs, ys = read_reference(base + ".reference.h5")
    xs = [x.astype(np.int32) if i in integer_inputs else x for i, x in enumerate(xs)]
    got = mf.predict(rebuilt, xs)
    assert len(got) == len(ys), (base, len(got), len(ys))
    for a, b in zip(got, ys):
        assert a.shape == b.shape, (base, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=base)


def run_keras1(out, check_only=False):
    mf.import_dialect("tfkeras215")
    folder = os.path.join(out, "keras1")
    if check_only:
        entries = [e for e in load_manifest(out).get("fixtures", []) if e["dialect"] == "keras1"]
        for e in entries:
            check_keras1(os.path.join(out, e["path"][:-3]), e.get("integer_inputs", []))
        print(f"  {len(entries)} keras1 fixtures, rebuilt from their Keras 1 files, match their references")
        return
    os.makedirs(folder, exist_ok=True)
    manifest = normalize_manifest(load_manifest(out))
    manifest["fixtures"] = [e for e in manifest["fixtures"] if e["dialect"] != "keras1"]
    for name, builder, kinds, notes in KERAS1_MODELS:
        mf.reset()
        model, spec, layer_names = builder()
        mf.randomize_weights(model, name)
        base = os.path.join(folder, name)
        with open(base + ".json", "w") as f:
            f.write(json.dumps(spec))  # one line, like Keras 1 model.to_json()
        write_keras1_weights(base + ".h5", model, layer_names)
        xs = make_inputs(model, name, kinds)
        _, unmapped = mf.write_reference(base + ".reference.h5", model, xs, "keras1", KERAS1_VERSION)
        with h5py.File(base + ".reference.h5", "r+") as f:
            f.attrs["made_with_keras_version"] = mf.KERAS_VERSION
        integer_inputs = [i for i, k in enumerate(kinds) if isinstance(k, tuple) and k[0] == "tokens"]
        check_keras1(base, integer_inputs)  # rebuild from the Keras 1 files alone and compare
        notes = list(notes)
        if unmapped:
            notes.append("weights not in coreml_weights (no make_fixtures mapping; tf.keras class names): "
                         + ", ".join(sorted(set(unmapped))))
        e = mf.manifest_entry(f"keras1/{name}.h5", "keras1", KERAS1_VERSION, model, {"notes": notes})
        e["model_class"] = spec["class_name"]
        e["json"] = f"keras1/{name}.json"
        e["layer_classes"] = sorted({x["class_name"] for x in (spec["config"] if isinstance(spec["config"], list)
                                                               else spec["config"]["layers"])})
        e["integer_inputs"] = integer_inputs
        e["pixel_inputs"] = []
        for i, k in enumerate(kinds):
            if isinstance(k, tuple):
                e["inputs"][i]["token_range"] = [0, k[1]]
        e["weights"] = {}
        with h5py.File(base + ".h5", "r") as f:
            for ln in _decode(f.attrs["layer_names"]):
                wn = _decode(f[ln].attrs["weight_names"]) if f[ln].attrs["weight_names"].size else []
                if wn:
                    e["weights"][ln] = [[n, list(f[ln][n].shape)] for n in wn]
        e["made_with_keras_version"] = mf.KERAS_VERSION
        e["notes"].append("weights-only Keras 1 HDF5 (no model_config); architecture in the .json; written by "
                          "make_layer_fixtures.py from an equivalent tf.keras model, not by Keras 1")
        manifest["fixtures"].append(e)
        print(f"  keras1/{name}.json + .h5 ok ({os.path.getsize(base + '.h5')} + "
              f"{os.path.getsize(base + '.reference.h5')} bytes); rebuilt from the Keras 1 files it matches "
              f"the reference")
    write_manifest(out, manifest)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dialect", choices=DIALECTS)
    ap.add_argument("--keras1", action="store_true", help="write the hand-made Keras 1.2 files (tfkeras215 venv)")
    ap.add_argument("--check", action="store_true",
                    help="only reload the dialect's existing fixtures (with --keras1: rebuild the models from the "
                         "Keras 1 JSON + weights) and compare them with their references")
    ap.add_argument("--models", help="comma-separated subset of the model names (default: all); the manifest "
                                      "keeps the other entries")
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    if bool(args.dialect) == bool(args.keras1):
        ap.error("give exactly one of --dialect or --keras1")
    if args.keras1 and args.models:
        ap.error("--models applies to --dialect only (--keras1 always writes or checks all its models)")
    only = None
    if args.models:
        only = set(args.models.split(","))
        unknown = only - {n for n, _ in MODELS}
        if unknown:
            ap.error(f"unknown models: {sorted(unknown)}")
    os.makedirs(args.out, exist_ok=True)
    if args.keras1:
        run_keras1(args.out, args.check)
    else:
        run_dialect(args.dialect, args.out, args.check, only)


if __name__ == "__main__":
    main()
