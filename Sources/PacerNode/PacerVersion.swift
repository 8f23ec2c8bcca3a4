/// The version of Pacer, reported in `info` and `pacer --version`.
public enum PacerVersion {
    public static let current = "0.1.0"
}
