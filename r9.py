import numpy as np, batchtensor as bt, warnings, sys
from scipy.spatial import distance
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
for dt in (np.float32, np.float64):
    u = rng.standard_normal((5, 4)).astype(dt); v = rng.standard_normal((5, 4)).astype(dt)
    w = rng.random((5,4)).astype(dt)
    print(dt.__name__, bt.vmap(distance.euclidean)(u, v)); sys.stdout.flush()
    print(dt.__name__, bt.vmap(distance.euclidean)(u, v, w)); sys.stdout.flush()
