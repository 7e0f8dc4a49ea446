"""Real-model tests: pretrained models from registry packages, exported torch / scikit-learn models, real clients."""
