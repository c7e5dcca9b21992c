/// A recurrent layer over a `[T, C]` sequence: SimpleRNN, LSTM or GRU, one or both directions.
///
/// Weights keep Keras' layouts and gate orders: LSTM `i, f, c, o`; GRU `z, r, h`.
public struct Recurrent: Sendable, Equatable {
  /// The cell type.
  public enum Cell: Sendable, Equatable {
    /// `h = activation(x·W + h·U + b)`.
    case simple
    case lstm
    /// `resetAfter`: the reset gate multiplies `h·U + b_recurrent` (Keras 2.x/3 default), else `h`
    /// before the product (the older formula, which Core ML's `gru` layer implements).
    case gru(resetAfter: Bool)

    /// Gates per step: 1, 4 or 3.
    public var gates: Int {
      switch self {
      case .simple: return 1
      case .lstm: return 4
      case .gru: return 3
      }
    }
  }

  /// One direction's weights.
  public struct Weights: Sendable, Equatable {
    /// `[C, gates * units]`.
    public var kernel: Constant
    /// `[units, gates * units]`.
    public var recurrentKernel: Constant
    /// `[gates * units]`, or `[2 * gates * units]` (input bias, then recurrent bias) for GRU with resetAfter.
    public var bias: Constant?

    public init(kernel: Constant, recurrentKernel: Constant, bias: Constant?) {
      self.kernel = kernel
      self.recurrentKernel = recurrentKernel
      self.bias = bias
    }
  }

  /// How a bidirectional layer combines its two directions.
  public enum Merge: String, Sendable, Equatable {
    case concat, sum, mul, ave
  }

  public var cell: Cell
  public var units: Int
  /// The output (and LSTM cell) activation, `tanh` by default.
  public var activation: Activation
  /// The gate activation, `sigmoid` or `hard_sigmoid` by default.
  public var recurrentActivation: Activation
  public var forward: Weights
  /// The backward direction of a bidirectional layer; its outputs are put back in time order.
  public var backward: Weights?
  public var merge: Merge
  /// Output every step (`[T, units]`) or only the last (`[units]`).
  public var returnSequences: Bool
  /// Process the sequence last step first (a single direction only); sequences come out in that order.
  public var goBackwards: Bool
  // A recurrent node reads `[T, C]`, and in a single direction optionally the initial hidden state
  // `[units]` and, for an LSTM, then the initial cell state `[units]` (zeros when not given).

  /// An LSTM's final cell state instead of its hidden state (`[units]`, both directions' joined by the
  /// merge); only with `returnSequences` false.
  public var returnsCellState: Bool

  public init(
    cell: Cell, units: Int, activation: Activation, recurrentActivation: Activation, forward: Weights,
    backward: Weights? = nil,
    merge: Merge = .concat, returnSequences: Bool, goBackwards: Bool = false, returnsCellState: Bool = false
  ) {
    self.cell = cell
    self.units = units
    self.activation = activation
    self.recurrentActivation = recurrentActivation
    self.forward = forward
    self.backward = backward
    self.merge = merge
    self.returnSequences = returnSequences
    self.goBackwards = goBackwards
    self.returnsCellState = returnsCellState
  }

  /// The width of one output step.
  public var outputUnits: Int { backward != nil && merge == .concat ? 2 * units : units }
}
