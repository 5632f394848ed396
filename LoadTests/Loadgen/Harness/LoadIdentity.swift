/// The app, key and team every scenario signs as; the mock accepts exactly these.
enum LoadIdentity {
    static let bundleID = "com.example.touchline"
    static let keyID = "LOADKEY001"
    static let teamID = "LOADTEAM01"
}
