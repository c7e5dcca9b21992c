#!/usr/bin/env python3
"""Write small `.mlmodel` files of many Core ML model types, for `modelconv inspect`.

Run by hand (not in CI), in a venv with the pins below:

    python3 -m venv /tmp/venv-ct
    /tmp/venv-ct/bin/pip install "coremltools==9.0" "numpy<2" "protobuf<5" "scikit-learn==1.5.1"
    /tmp/venv-ct/bin/python Samples/make_coreml_model_types.py --out Samples/Fixtures/model_types

Each model is made with coremltools' own builders where it has one (`coremltools.converters.sklearn`,
`coremltools.models.pipeline`, `nearest_neighbors`, `array_feature_extractor`, `feature_vectorizer`,
`neural_network`), else as a hand-filled `Model_pb2.Model` spec (text classifier, word tagger, Vision
feature print, recommender, custom and linked models, ...). Files are saved with `ct.utils.save_spec`.

`expected.json` then lists, for every file, what coremltools reads back from it (`ct.utils.load_spec`): the
`Model.Type` oneof case, the specification version, inputs and outputs with their feature types, the class
labels (a pipeline classifier's are its last sub-model's; a word tagger's are its tags) and the sub-models of
pipelines (type, name, inputs, outputs, sub-models), recursively. Everything is seeded: reruns give the
same files.
"""

import argparse
import json
import os

import numpy as np
import coremltools as ct
from coremltools.models import datatypes
from coremltools.models.pipeline import Pipeline, PipelineClassifier, PipelineRegressor
from coremltools.proto import FeatureTypes_pb2, Model_pb2

PINS = {"coremltools": "9.0"}


# ---------- expected.json: read back with coremltools ----------

DATA_TYPES = {
    FeatureTypes_pb2.ArrayFeatureType.FLOAT32: "float32",
    FeatureTypes_pb2.ArrayFeatureType.DOUBLE: "double",
    FeatureTypes_pb2.ArrayFeatureType.INT32: "int32",
    FeatureTypes_pb2.ArrayFeatureType.FLOAT16: "float16",
    FeatureTypes_pb2.ArrayFeatureType.INT8: "int8",
}


def feature(desc):
    t = desc.type
    which = t.WhichOneof("Type")
    out = {"name": desc.name, "kind": {
        "int64Type": "int64", "doubleType": "double", "stringType": "string", "imageType": "image",
        "multiArrayType": "multiArray", "dictionaryType": "dictionary", "sequenceType": "sequence", "stateType": "state",
    }[which]}
    if which == "multiArrayType":
        out["shape"] = [int(v) for v in t.multiArrayType.shape]
        out["dataType"] = DATA_TYPES[t.multiArrayType.dataType]
    elif which == "imageType":
        out["width"] = int(t.imageType.width)
        out["height"] = int(t.imageType.height)
        out["colorSpace"] = FeatureTypes_pb2.ImageFeatureType.ColorSpace.Name(t.imageType.colorSpace)
    elif which == "dictionaryType":
        out["keyType"] = "int64" if t.dictionaryType.WhichOneof("KeyType") == "int64KeyType" else "string"
    elif which == "sequenceType":
        out["valueType"] = "int64" if t.sequenceType.WhichOneof("Type") == "int64Type" else "string"
    return out


def labels(spec):
    kind = spec.WhichOneof("Type")
    body = getattr(spec, kind)
    if kind in ("pipelineClassifier",):
        return labels(body.pipeline.models[-1]) if body.pipeline.models else []
    if kind == "wordTagger":
        return list(body.stringTags.vector)
    for field in ("stringClassLabels", "int64ClassLabels"):
        if field in [f.name for f in body.DESCRIPTOR.fields] and body.HasField(field):
            return [str(v) for v in getattr(body, field).vector]
    return []


def sub_models(spec):
    kind = spec.WhichOneof("Type")
    if kind not in ("pipeline", "pipelineClassifier", "pipelineRegressor"):
        return []
    pipeline = spec.pipeline if kind == "pipeline" else getattr(spec, kind).pipeline
    result = []
    for index, model in enumerate(pipeline.models):
        result.append({
            "type": model.WhichOneof("Type"),
            "name": pipeline.names[index] if index < len(pipeline.names) else None,
            "specificationVersion": model.specificationVersion,
            "inputs": [feature(f) for f in model.description.input],
            "outputs": [feature(f) for f in model.description.output],
            "labels": labels(model),
            "subModels": sub_models(model),
        })
    return result


def describe(path):
    spec = ct.utils.load_spec(path)
    meta = spec.description.metadata
    return {
        "type": spec.WhichOneof("Type"),
        "specificationVersion": spec.specificationVersion,
        "inputs": [feature(f) for f in spec.description.input],
        "outputs": [feature(f) for f in spec.description.output],
        "labels": labels(spec),
        "subModels": sub_models(spec),
        "metadata": {"author": meta.author, "license": meta.license, "shortDescription": meta.shortDescription,
                     "version": meta.versionString, "userDefined": dict(sorted(meta.userDefined.items()))},
    }


# ---------- hand-built spec helpers ----------

def add_feature(features, name, kind, shape=None, data_type="DOUBLE", key="string", element="string"):
    f = features.add()
    f.name = name
    if kind == "double":
        f.type.doubleType.MergeFromString(b"")
    elif kind == "int64":
        f.type.int64Type.MergeFromString(b"")
    elif kind == "string":
        f.type.stringType.MergeFromString(b"")
    elif kind == "array":
        f.type.multiArrayType.shape.extend(shape)
        f.type.multiArrayType.dataType = FeatureTypes_pb2.ArrayFeatureType.ArrayDataType.Value(data_type)
    elif kind == "dict":
        if key == "string":
            f.type.dictionaryType.stringKeyType.MergeFromString(b"")
        else:
            f.type.dictionaryType.int64KeyType.MergeFromString(b"")
    elif kind == "sequence":
        if element == "string":
            f.type.sequenceType.stringType.MergeFromString(b"")
        else:
            f.type.sequenceType.int64Type.MergeFromString(b"")
    elif kind.startswith("image"):
        _, color, size = kind.split(":")
        f.type.imageType.width = int(size)
        f.type.imageType.height = int(size)
        f.type.imageType.colorSpace = FeatureTypes_pb2.ImageFeatureType.ColorSpace.Value(color)
    return f


def new_spec(version):
    spec = Model_pb2.Model()
    spec.specificationVersion = version
    return spec


def save(spec, out, name):
    ct.utils.save_spec(spec, os.path.join(out, name))


# ---------- the models ----------

def sklearn_models(out, rng):
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.svm import SVC, SVR
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import StandardScaler, Normalizer
    from sklearn.impute import SimpleImputer
    from sklearn.feature_extraction import DictVectorizer
    from coremltools.converters import sklearn as sk

    x = rng.normal(size=(24, 3))
    y_int = (x[:, 0] + x[:, 1] > 0).astype(int) + (x[:, 2] > 0.5).astype(int)
    names = np.array(["cat", "dog", "bird"])
    y_str = names[y_int]
    y_real = x @ np.array([1.5, -2.0, 0.5]) + 0.25
    inputs = ["a", "b", "c"]

    def convert(model, name, output, meta=None, names=inputs):
        # Several named double inputs make coremltools put a featureVectorizer in front (a pipeline); one
        # name gives a lone model with one double array input.
        mlmodel = sk.convert(model, names, output)
        spec = mlmodel.get_spec()
        if meta:
            spec.description.metadata.author = meta
            spec.description.metadata.license = "CC0"
            spec.description.metadata.shortDescription = "a " + name.replace("_", " ")
            spec.description.metadata.versionString = "1.0"
            spec.description.metadata.userDefined["made.by"] = "make_coreml_model_types.py"
        save(spec, out, name + ".mlmodel")

    convert(LogisticRegression(multi_class="ovr").fit(x, y_str), "glm_classifier_string", "species", meta="ModelConverter")
    convert(LogisticRegression(multi_class="ovr").fit(x, y_int), "glm_classifier_int", "klass", names="features")
    convert(LinearRegression().fit(x, y_real), "glm_regressor", "value", names="features")
    convert(DecisionTreeClassifier(max_depth=2, random_state=0).fit(x, y_str), "tree_classifier", "species", names="features")
    convert(RandomForestClassifier(n_estimators=2, max_depth=2, random_state=0).fit(x, y_int), "forest_classifier", "klass")
    convert(DecisionTreeRegressor(max_depth=2, random_state=0).fit(x, y_real), "tree_regressor", "value")
    convert(SVC(kernel="linear").fit(x, y_str), "svm_classifier", "species")
    convert(SVR(kernel="rbf").fit(x, y_real), "svm_regressor", "value")
    convert(KNeighborsClassifier(n_neighbors=3).fit(x, y_int), "knn_classifier", "klass")
    convert(StandardScaler().fit(x), "scaler", "scaled", names="features")
    convert(Normalizer().fit(x), "normalizer", "normalized")
    x_missing = x.copy()
    x_missing[0, 1] = np.nan
    convert(SimpleImputer(strategy="mean").fit(x_missing), "imputer", "imputed")
    # coremltools 9 cannot convert a scikit-learn Pipeline ending in a LogisticRegression (its converter wraps
    # an MLModel in an MLModel), so the pipelines are put together with coremltools.models.pipeline instead,
    # from the converted scaler and GLM specs.
    scaler = StandardScaler().fit(x)
    scaled = scaler.transform(x)
    scaler_spec = sk.convert(scaler, inputs, "scaled").get_spec()
    glm_spec = sk.convert(LogisticRegression(multi_class="ovr").fit(scaled, y_str), "scaled", "species").get_spec()
    pipeline = PipelineClassifier([(n, datatypes.Double()) for n in inputs], list(glm_spec.glmClassifier.stringClassLabels.vector),
                                  "species")
    pipeline.add_model(scaler_spec)
    pipeline.add_model(glm_spec)
    del pipeline.spec.description.output[:]
    pipeline.spec.description.output.extend(glm_spec.description.output)
    pipeline.spec.description.predictedFeatureName = glm_spec.description.predictedFeatureName
    pipeline.spec.description.predictedProbabilitiesName = glm_spec.description.predictedProbabilitiesName
    pipeline.spec.pipelineClassifier.pipeline.names.extend(["scale", "glm"])
    save(pipeline.spec, out, "pipeline_classifier.mlmodel")
    reg_spec = sk.convert(LinearRegression().fit(scaled, y_real), "scaled", "value").get_spec()
    pipeline = PipelineRegressor([(n, datatypes.Double()) for n in inputs], [("value", datatypes.Double())])
    pipeline.add_model(scaler_spec)
    pipeline.add_model(reg_spec)
    save(pipeline.spec, out, "pipeline_regressor.mlmodel")

    vectorizer = DictVectorizer(sparse=False).fit([{"red": 1.0, "green": 2.0}, {"blue": 3.0}])
    spec = sk.convert(vectorizer, "colors", "vector").get_spec()
    save(spec, out, "dict_vectorizer.mlmodel")


def builder_models(out, rng):
    from coremltools.models import array_feature_extractor, feature_vectorizer, nearest_neighbors
    from coremltools.models.neural_network import NeuralNetworkBuilder

    # Array feature extractor: elements 0 and 2 of a double array.
    spec = array_feature_extractor.create_array_feature_extractor(
        [("features", datatypes.Array(4))], "picked", [0, 2])
    save(spec, out, "array_feature_extractor.mlmodel")

    # Feature vectorizer: a double and a 2-element array into one array.
    spec, _ = feature_vectorizer.create_feature_vectorizer(
        [("height", datatypes.Double()), ("pair", datatypes.Array(2))], "joined")
    save(spec, out, "feature_vectorizer.mlmodel")

    # k-NN classifier with string labels, from coremltools' builder.
    builder = nearest_neighbors.KNearestNeighborsClassifierBuilder(
        input_name="point", output_name="label", number_of_dimensions=2, default_class_label="none",
        k=1, weighting_scheme="uniform", index_type="linear")
    builder.add_samples(rng.normal(size=(4, 2)).astype(np.float32), ["north", "south", "north", "east"])
    save(builder.spec, out, "knn_builder_classifier.mlmodel")

    # A neural network classifier inside a pipeline classifier, behind a scaler.
    nn = NeuralNetworkBuilder([("scaled", datatypes.Array(3))], [("probs", datatypes.Array(2))],
                              mode="classifier")
    nn.add_inner_product("dense", W=rng.normal(size=(2, 3)).astype(np.float32), b=np.zeros(2, np.float32),
                         input_channels=3, output_channels=2, has_bias=True, input_name="scaled", output_name="logits")
    nn.add_softmax("softmax", "logits", "probs")
    nn.set_class_labels(["left", "right"], predicted_feature_name="side", prediction_blob="probs")
    nn_spec = nn.spec
    nn_spec.specificationVersion = 4
    scaler = new_spec(1)
    add_feature(scaler.description.input, "raw", "array", shape=[3])
    add_feature(scaler.description.output, "scaled", "array", shape=[3])
    scaler.scaler.shiftValue.extend([0.0, 0.0, 0.0])
    scaler.scaler.scaleValue.extend([0.5, 0.5, 0.5])
    pipeline = PipelineClassifier([("raw", datatypes.Array(3))], ["left", "right"], "side")
    pipeline.add_model(scaler)
    pipeline.add_model(nn_spec)
    del pipeline.spec.description.output[:]
    pipeline.spec.description.output.extend(nn_spec.description.output)
    pipeline.spec.specificationVersion = 4
    pipeline.spec.pipelineClassifier.pipeline.names.extend(["scale", "network"])
    save(pipeline.spec, out, "pipeline_nn_classifier.mlmodel")

    # A plain pipeline whose second model is itself a pipeline regressor (nested sub-models).
    inner = PipelineRegressor([("s", datatypes.Double())], [("v", datatypes.Double())])
    ident = new_spec(4)
    add_feature(ident.description.input, "s", "double")
    add_feature(ident.description.output, "v", "double")
    ident.identity.MergeFromString(b"")
    inner.add_model(ident)
    inner.spec.specificationVersion = 4
    first = new_spec(4)
    add_feature(first.description.input, "x", "double")
    add_feature(first.description.output, "s", "double")
    first.identity.MergeFromString(b"")
    outer = Pipeline([("x", datatypes.Double())], [("v", datatypes.Double())])
    outer.add_model(first)
    outer.add_model(inner.spec)
    outer.spec.specificationVersion = 4
    save(outer.spec, out, "pipeline_nested.mlmodel")


def hand_built_models(out):
    # Identity with array inputs of several element types (Core ML 5: float16 arrays need specification 7? no:
    # the declared type is only a description here).
    spec = new_spec(7)
    for name, data_type, shape in [("f16", "FLOAT16", [2, 3]), ("i32", "INT32", [4]), ("f64", "DOUBLE", [1, 2, 2]),
                                   ("f32", "FLOAT32", [5])]:
        add_feature(spec.description.input, name, "array", shape=shape, data_type=data_type)
        add_feature(spec.description.output, name + "_out", "array", shape=shape, data_type=data_type)
    spec.identity.MergeFromString(b"")
    save(spec, out, "identity.mlmodel")

    # One-hot encoder over strings.
    spec = new_spec(1)
    add_feature(spec.description.input, "color", "string")
    add_feature(spec.description.output, "encoded", "array", shape=[3])
    spec.oneHotEncoder.stringCategories.vector.extend(["red", "green", "blue"])
    spec.oneHotEncoder.outputSparse = False
    save(spec, out, "one_hot_encoder.mlmodel")

    # Categorical mapping string -> int64.
    spec = new_spec(1)
    add_feature(spec.description.input, "word", "string")
    add_feature(spec.description.output, "code", "int64")
    spec.categoricalMapping.stringToInt64Map.map["yes"] = 1
    spec.categoricalMapping.stringToInt64Map.map["no"] = 0
    spec.categoricalMapping.int64Value = -1
    save(spec, out, "categorical_mapping.mlmodel")

    # Text classifier (Create ML style: the model data is opaque; empty here).
    spec = new_spec(3)
    add_feature(spec.description.input, "text", "string")
    add_feature(spec.description.output, "label", "string")
    spec.description.predictedFeatureName = "label"
    spec.textClassifier.revision = 1
    spec.textClassifier.language = "en"
    spec.textClassifier.stringClassLabels.vector.extend(["positive", "negative", "neutral"])
    spec.description.metadata.author = "hand-built"
    save(spec, out, "text_classifier.mlmodel")

    # Word tagger: sequence outputs.
    spec = new_spec(3)
    add_feature(spec.description.input, "text", "string")
    add_feature(spec.description.output, "tokens", "sequence", element="string")
    add_feature(spec.description.output, "tags", "sequence", element="string")
    add_feature(spec.description.output, "locations", "sequence", element="int64")
    add_feature(spec.description.output, "lengths", "sequence", element="int64")
    w = spec.wordTagger
    w.revision = 1
    w.language = "en"
    w.tokensOutputFeatureName = "tokens"
    w.tokenTagsOutputFeatureName = "tags"
    w.tokenLocationsOutputFeatureName = "locations"
    w.tokenLengthsOutputFeatureName = "lengths"
    w.stringTags.vector.extend(["NAME", "PLACE", "OTHER"])
    save(spec, out, "word_tagger.mlmodel")

    # Create ML image classifier layout: Vision scene feature print + GLM classifier in a pipeline classifier.
    vfp = new_spec(4)
    add_feature(vfp.description.input, "image", "image:BGR:299")
    add_feature(vfp.description.output, "sceneFeatures", "array", shape=[2048])
    vfp.visionFeaturePrint.scene.version = 1
    glm = new_spec(1)
    add_feature(glm.description.input, "sceneFeatures", "array", shape=[2048])
    add_feature(glm.description.output, "classLabel", "string")
    add_feature(glm.description.output, "classLabelProbs", "dict", key="string")
    glm.description.predictedFeatureName = "classLabel"
    glm.description.predictedProbabilitiesName = "classLabelProbs"
    for _ in range(2):
        glm.glmClassifier.weights.add().value.extend([0.0] * 4)
    glm.glmClassifier.offset.extend([0.0, 0.0])
    glm.glmClassifier.postEvaluationTransform = 1  # Logit
    glm.glmClassifier.classEncoding = 1  # OneVsRest
    glm.glmClassifier.stringClassLabels.vector.extend(["corgi", "husky"])
    spec = new_spec(4)
    add_feature(spec.description.input, "image", "image:BGR:299")
    add_feature(spec.description.output, "classLabel", "string")
    add_feature(spec.description.output, "classLabelProbs", "dict", key="string")
    spec.description.predictedFeatureName = "classLabel"
    spec.description.predictedProbabilitiesName = "classLabelProbs"
    spec.pipelineClassifier.pipeline.models.extend([vfp, glm])
    spec.description.metadata.shortDescription = "Vision feature print and a GLM classifier"
    save(spec, out, "vision_feature_print_pipeline.mlmodel")

    # Sound analysis preprocessing (vggish).
    spec = new_spec(4)
    add_feature(spec.description.input, "audio", "array", shape=[15600], data_type="FLOAT32")
    add_feature(spec.description.output, "melspec", "array", shape=[1, 96, 64], data_type="FLOAT32")
    spec.soundAnalysisPreprocessing.vggish.MergeFromString(b"")
    save(spec, out, "sound_analysis_preprocessing.mlmodel")

    # Item similarity recommender with string item ids.
    spec = new_spec(3)
    add_feature(spec.description.input, "items", "dict", key="string")
    add_feature(spec.description.input, "k", "int64")
    add_feature(spec.description.output, "recommendations", "sequence", element="string")
    add_feature(spec.description.output, "scores", "dict", key="string")
    r = spec.itemSimilarityRecommender
    similar = r.itemItemSimilarities.add()
    similar.itemId = 0
    connected = similar.similarItemList.add()
    connected.itemId = 1
    connected.similarityScore = 0.5
    r.itemStringIds.vector.extend(["apple", "pear"])
    r.itemInputFeatureName = "items"
    r.numRecommendationsInputFeatureName = "k"
    r.recommendedItemListOutputFeatureName = "recommendations"
    r.recommendedItemScoreOutputFeatureName = "scores"
    save(spec, out, "item_similarity_recommender.mlmodel")

    # Custom model.
    spec = new_spec(2)
    add_feature(spec.description.input, "x", "double")
    add_feature(spec.description.output, "y", "double")
    spec.customModel.className = "MyCustomModel"
    spec.customModel.description = "computed by the app"
    spec.customModel.parameters["gain"].doubleValue = 2.0
    save(spec, out, "custom_model.mlmodel")

    # Linked model (a compiled model shipped beside the file).
    spec = new_spec(4)
    add_feature(spec.description.input, "x", "array", shape=[3])
    add_feature(spec.description.output, "y", "array", shape=[3])
    spec.linkedModel.linkedModelFile.linkedModelFileName.defaultValue = "Other.mlmodelc"
    spec.linkedModel.linkedModelFile.linkedModelSearchPath.defaultValue = "$BUNDLE_MAIN"
    save(spec, out, "linked_model.mlmodel")

    # Non-maximum suppression with int64 labels.
    spec = new_spec(3)
    for name, shape in [("confidence", [0, 2]), ("coordinates", [0, 4])]:
        add_feature(spec.description.input, name, "array", shape=shape)
        add_feature(spec.description.output, name + "_kept", "array", shape=shape)
    n = spec.nonMaximumSuppression
    n.pickTop.perClass = False
    n.int64ClassLabels.vector.extend([7, 11])
    n.iouThreshold = 0.5
    n.confidenceThreshold = 0.1
    n.confidenceInputFeatureName = "confidence"
    n.coordinatesInputFeatureName = "coordinates"
    n.confidenceOutputFeatureName = "confidence_kept"
    n.coordinatesOutputFeatureName = "coordinates_kept"
    save(spec, out, "non_maximum_suppression.mlmodel")

    # Gazetteer and word embedding (opaque Create ML data; empty here).
    spec = new_spec(4)
    add_feature(spec.description.input, "text", "string")
    add_feature(spec.description.output, "labels", "sequence", element="string")
    spec.gazetteer.revision = 2
    spec.gazetteer.language = "en"
    spec.gazetteer.stringClassLabels.vector.extend(["CITY", "RIVER"])
    save(spec, out, "gazetteer.mlmodel")
    spec = new_spec(4)
    add_feature(spec.description.input, "word", "string")
    add_feature(spec.description.output, "vector", "array", shape=[8])
    spec.wordEmbedding.revision = 2
    spec.wordEmbedding.language = "en"
    save(spec, out, "word_embedding.mlmodel")

    # Bayesian probit regressor.
    spec = new_spec(3)
    add_feature(spec.description.input, "features", "dict", key="int64")
    add_feature(spec.description.output, "mean", "double")
    spec.bayesianProbitRegressor.numberOfFeatures = 1
    spec.bayesianProbitRegressor.regressionInputFeatureName = "features"
    spec.bayesianProbitRegressor.meanOutputFeatureName = "mean"
    save(spec, out, "bayesian_probit_regressor.mlmodel")

    # Class confidence thresholding (Core ML 8).
    spec = new_spec(9)
    add_feature(spec.description.input, "probs", "array", shape=[2], data_type="FLOAT32")
    add_feature(spec.description.output, "accepted", "array", shape=[2], data_type="FLOAT32")
    spec.classConfidenceThresholding.precisionRecallCurves.add()
    save(spec, out, "class_confidence_thresholding.mlmodel")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="Samples/Fixtures/model_types")
    args = parser.parse_args()
    assert ct.__version__ == PINS["coremltools"], ct.__version__
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(19)
    sklearn_models(args.out, rng)
    builder_models(args.out, rng)
    hand_built_models(args.out)
    expected = {}
    for name in sorted(os.listdir(args.out)):
        if name.endswith(".mlmodel"):
            expected[name] = describe(os.path.join(args.out, name))
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump({"coremltools": ct.__version__, "models": expected}, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {len(expected)} models to {args.out}")


if __name__ == "__main__":
    main()
