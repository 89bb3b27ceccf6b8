"""Pictures: attention heat maps, overlays on the map, ablation plots, routes side by side.
Drawn from what the layers below return; nothing below imports it."""
