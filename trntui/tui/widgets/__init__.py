"""Line-API widgets of the trntui app: op table, timeline, chain."""
