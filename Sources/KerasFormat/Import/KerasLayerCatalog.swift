/// The Keras layer classes the importer accepts, derived from `KerasLayerRegistry`.
enum KerasLayerCatalog {
  /// Classes accepted without a handler of their own, each on purpose:
  /// - `InputLayer`: becomes a graph input (`addGraphInput`); inner InputLayers of nested models are skipped.
  ///
  /// Nested model classes (`Sequential`, `Functional`, `Model`) are not listed: they are expanded
  /// (`KerasModelConfig.allLayers`, `isModel`) before any class is checked.
  static let acceptedWithoutHandler: Set<String> = ["InputLayer"]

  /// Every class name with a conversion: the registry's keys plus `acceptedWithoutHandler`.
  static let supportedClassNames: Set<String> = Set(KerasLayerRegistry.handlers.keys).union(acceptedWithoutHandler)
}
