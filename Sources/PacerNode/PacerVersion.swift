/// The version of Pacer, reported in `info` and `pacer --version`, and the Debian package's.
///
/// It is the newest version of CHANGELOG.md: a user-visible change adds its entry there and
/// raises this (VersionTests checks that the two agree).
public enum PacerVersion {
    public static let current = "0.5.0"
}
