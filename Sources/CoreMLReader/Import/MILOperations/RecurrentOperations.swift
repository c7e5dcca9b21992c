import CoreMLCommon

extension MILOperationRegistry {
  /// LSTM, GRU and simple RNN layers (`MILProgramImporter+Recurrent.swift`).
  static let recurrentOperations: [String: MILOperationEntry] = all(["lstm", "gru", "rnn"]) { try $0.recurrent() }
}
