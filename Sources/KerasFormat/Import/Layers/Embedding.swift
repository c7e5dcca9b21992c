import ModelFormats
import ModelIR

extension KerasLayerRegistry {
  static let embeddingStoredWeights: [String: @Sendable (JSONValue) -> [String]] = [
    "Embedding": { _ in ["embeddings"] }
  ]

  static let embeddingHandlers: [String: KerasLayerHandler] = [
    "Embedding": { try $0.convertEmbedding($1) }
  ]
}

extension KerasGraphImporter {
  mutating func convertEmbedding(_ call: KerasLayerCall) throws -> ValueID {
    let input = try call.single()
    let table = try weight(
      ["embeddings", "kernel"], [try call.reader.int("input_dim"), try call.reader.int("output_dim")], call)
    return try add(.embedding(table: table), [input], call)
  }
}
