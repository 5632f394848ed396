/// The gateway is made from its configuration (``Gateway/init(configuration:clock:log:configurationSource:)``):
/// whoever imports the gateway gets the configuration's types with it, as one API.
@_exported import TouchlineConfiguration
