/// What is told when something about a channel changes (its state, lifecycle or figures): the
/// dashboard's live feed, which sits above the channels and sends a snapshot shortly after.
/// Called on the ingest loop, which the watcher shares with the ``ChannelService``.
package protocol ChannelChangeWatcher: AnyObject {
    func channelChanged()
}
