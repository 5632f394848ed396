/// The release this binary belongs to.
let touchlineVersion = "0.1.0"
