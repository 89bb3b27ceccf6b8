"""The map predictor: a small U-Net that guesses the unknown cells of a belief map."""
from predictor.network import MapPredictor

__all__ = ["MapPredictor"]
