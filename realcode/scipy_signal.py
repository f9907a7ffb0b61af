"""SciPy's signal processing in Python (``scipy.signal``): windows with their parameters
mapped, filter design, filtering, spectral estimates and waveforms."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .draw import image, normal, shape_of

S = "scipy.signal"
W = "scipy.signal.windows"
FLOATS = (np.float64, np.float32)
#: a signal, and two signals filtered along the last axis
SIZES = (24, (2, 24))


def scalar(low: float, high: float, *more: tuple):
    """A generator of 0-d parameters drawn in ``[low, high)`` (and further ranges)."""
    ranges = ((low, high),) + more

    def gen(rng, dt, size):
        return tuple(np.asarray(rng.uniform(lo, hi)).astype(dt) for lo, hi in ranges)
    return gen


def _w(attr, gen, label="", m=16, **kw):
    return Entry(W, attr, gen, dtypes=FLOATS, sizes=((),), args=(m,), kwargs=kw, label=label)


def cosine_terms(rng, dt, size):
    a = rng.uniform(0.05, 0.5, 3)
    return (np.concatenate([[1.0 - a.sum() / 2], a / 2]).astype(dt),)


WINDOWS = [
    _w("kaiser", scalar(0.5, 12.0)),
    _w("kaiser", scalar(0.5, 12.0), label="M=1", m=1),
    _w("gaussian", scalar(1.0, 5.0)),
    _w("general_gaussian", scalar(0.5, 3.0, (1.0, 6.0))),
    _w("tukey", scalar(0.05, 0.95)),
    Entry(W, "exponential", scalar(1.0, 8.0), dtypes=FLOATS, sizes=((),), args=(16, None)),
    _w("chebwin", scalar(40.0, 100.0)),
    Entry(W, "taylor", scalar(20.0, 60.0), dtypes=FLOATS, sizes=((),), args=(16, 4)),
    _w("general_cosine", cosine_terms),
    _w("general_hamming", scalar(0.5, 0.9)),
    _w("kaiser_bessel_derived", scalar(0.5, 12.0)),
    _w("dpss", scalar(1.0, 4.0)),
]


# ---- filters ------------------------------------------------------------------------------------
def _stable(rng, order: int):
    """Denominator coefficients of a stable filter: poles inside the unit circle."""
    poles = rng.uniform(0.1, 0.8, order) * np.exp(1j * rng.uniform(0, np.pi, order))
    poles = np.concatenate([poles, poles.conj()])[:order] if order > 1 else poles.real
    a = np.real(np.poly(poles[:order]))
    return a


def ba(rng, dt):
    return rng.uniform(-1, 1, 3).astype(dt), _stable(rng, 2).astype(dt)


def filter_and_signal(rng, dt, size):
    b, a = ba(rng, dt)
    return b, a, normal(rng, dt, size)


def filter_only(rng, dt, size):
    return ba(rng, dt)


def _sos(rng, dt):
    from scipy.signal import butter  # the library itself draws a realistic filter
    return butter(4, rng.uniform(0.1, 0.6), output="sos").astype(dt)


def sos_and_signal(rng, dt, size):
    return _sos(rng, dt), normal(rng, dt, size)


def sos_only(rng, dt, size):
    return (_sos(rng, dt),)


def signal(rng, dt, size):
    shape = shape_of(size)
    t = np.arange(shape[-1])
    tone = np.sin(2 * np.pi * rng.uniform(0.02, 0.2) * t + rng.uniform(0, 6))
    return ((tone + 0.3 * rng.standard_normal(shape)).astype(dt),)


def two_signals(rng, dt, size):
    return signal(rng, dt, size) + signal(rng, dt, size)


def signal_and_kernel(rng, dt, size):
    return signal(rng, dt, size)[0], rng.uniform(-1, 1, 5).astype(dt)


def image_and_kernel(rng, dt, size):
    return image(rng, dt, size), rng.uniform(-1, 1, (3, 3)).astype(dt)


def times(rng, dt, size):
    return (np.sort(rng.uniform(0, 4, shape_of(size))).astype(dt),)


def lombscargle_args(rng, dt, size):
    n = shape_of(size)[0]
    t = np.sort(rng.uniform(0, 10, n))
    return (t.astype(dt), np.sin(rng.uniform(0.5, 2) * t).astype(dt) + 0.1,
            np.linspace(0.1, 3, 6).astype(dt))


def symmetric_fir(rng, dt, size):
    h = rng.uniform(0.1, 1, 5)
    return (np.concatenate([h, h[:-1][::-1]]).astype(dt),)


def deconvolve_args(rng, dt, size):
    divisor = np.concatenate([[1.0], rng.uniform(-0.4, 0.4, 2)])
    return normal(rng, dt, size), divisor.astype(dt)


def zpk(rng, dt, size):
    z = rng.uniform(-1, 1, 2).astype(dt)
    p = rng.uniform(-0.9, 0.9, 2).astype(dt)
    return z, p, np.asarray(rng.uniform(0.5, 2)).astype(dt)


def spline_and_points(rng, dt, size):
    return normal(rng, dt, size), rng.uniform(0, shape_of(size)[0] - 1, 7).astype(dt)


def firwin2_gain(rng, dt, size):
    return (np.array([1.0, rng.uniform(0.3, 1), rng.uniform(0, 0.3), 0.0]).astype(dt),)


def _s(attr, gen=signal, label="", sizes=SIZES, dtypes=FLOATS, args=(), shared=None,
       rtol=None, not_applicable=None, **kw):
    return Entry(S, attr, gen, dtypes=dtypes, sizes=sizes, args=args, kwargs=kw, label=label,
                 shared=shared, rtol=rtol, not_applicable=not_applicable or {})


NOT_CONTIGUOUS = {"in_axes=-1": "the loop itself raises: the compiled filter needs a "
                                "C-contiguous sos, and the loop's sos[..., i] views are not"}


ONE = (24,)
FILTERS = [
    _s("lfilter", filter_and_signal, shared=(0, 1)),
    _s("lfilter_zi", filter_only, sizes=((),)),
    _s("filtfilt", filter_and_signal, shared=(0, 1)),
    _s("sosfilt", sos_and_signal, not_applicable=NOT_CONTIGUOUS),
    _s("sosfiltfilt", sos_and_signal, not_applicable=NOT_CONTIGUOUS),
    _s("sosfilt_zi", sos_only, sizes=((),)),
    _s("savgol_filter", window_length=7, polyorder=2),
    _s("medfilt", kernel_size=5, sizes=ONE),
    _s("medfilt2d", lambda rng, dt, size: (image(rng, dt, size),), sizes=((6, 7),),
       dtypes=(np.float64, np.uint8), kernel_size=3),
    _s("order_filter", sizes=ONE, domain=np.ones(3), rank=1),
    _s("wiener", sizes=ONE, mysize=5),
    _s("detrend"),
    _s("detrend", label="constant", type="constant"),
    _s("hilbert"),
    _s("envelope", sizes=ONE),
    _s("convolve", signal_and_kernel, sizes=ONE),
    _s("correlate", signal_and_kernel, sizes=ONE, mode="same"),
    _s("fftconvolve", signal_and_kernel, sizes=ONE),
    _s("oaconvolve", signal_and_kernel, sizes=ONE),
    _s("convolve2d", image_and_kernel, sizes=((5, 6),), mode="same"),
    _s("correlate2d", image_and_kernel, sizes=((5, 6),), boundary="symm"),
    _s("resample", num=16, axis=-1),
    _s("resample_poly", up=3, down=2, axis=-1),
    _s("decimate", sizes=(40, (2, 40)), q=2),
    _s("upfirdn", lambda rng, dt, size: signal_and_kernel(rng, dt, size)[::-1], sizes=ONE,
       up=2),
    _s("deconvolve", deconvolve_args, sizes=(12,), dtypes=(np.float64,)),
    _s("cspline1d", sizes=(12,), dtypes=(np.float64,)),
    _s("qspline1d", sizes=(12,), dtypes=(np.float64,)),
    _s("cspline1d_eval", spline_and_points, sizes=(12,), dtypes=(np.float64,)),
    _s("gauss_spline", sizes=(12,), n=3),
    _s("czt", m=8),
    _s("zoom_fft", fn=[0.1, 0.4], m=8),
    _s("lombscargle", lombscargle_args, sizes=(20,), dtypes=(np.float64,), shared=(2,)),
    # spectra
    _s("periodogram"),
    _s("welch", nperseg=8),
    _s("csd", two_signals, nperseg=8),
    _s("coherence", two_signals, sizes=ONE, nperseg=8),
    _s("spectrogram", nperseg=8),
    _s("stft", nperseg=8),
    # filter design
    _s("freqz", filter_only, sizes=((),), worN=8),
    _s("sosfreqz", sos_only, sizes=((),), worN=8),
    _s("freqs", filter_only, sizes=((),), worN=8),
    _s("tf2zpk", filter_only, sizes=((),), dtypes=(np.float64,)),
    _s("zpk2tf", zpk, sizes=((),), dtypes=(np.float64,)),
    _s("bilinear", filter_only, sizes=((),), fs=10.0),
    _s("lp2lp", filter_only, sizes=((),), wo=2.0),
    _s("normalize", filter_only, sizes=((),)),
    _s("butter", scalar(0.05, 0.9), sizes=((),), dtypes=(np.float64,), args=(4,),
       output="sos"),
    _s("butter", scalar(0.05, 0.9), label="ba", sizes=((),), dtypes=(np.float64,),
       args=(3,)),
    _s("cheby1", scalar(0.05, 0.9), sizes=((),), dtypes=(np.float64,), args=(4, 1.0),
       output="sos"),
    _s("bessel", scalar(0.05, 0.9), sizes=((),), dtypes=(np.float64,), args=(3,)),
    _s("iirnotch", scalar(0.1, 0.9, (5.0, 40.0)), sizes=((),), dtypes=(np.float64,)),
    _s("iirpeak", scalar(0.1, 0.9, (5.0, 40.0)), sizes=((),), dtypes=(np.float64,)),
    _s("firwin", scalar(0.1, 0.9), sizes=((),), dtypes=(np.float64,), args=(15,)),
    _s("firwin2", firwin2_gain, sizes=((),), dtypes=(np.float64,), args=(15, [0, 0.3, 0.6, 1])),
    _s("minimum_phase", symmetric_fir, sizes=((),), dtypes=(np.float64,)),
    _s("kaiser_beta", scalar(10.0, 80.0), sizes=((),), dtypes=(np.float64,)),
    _s("kaiser_atten", scalar(0.01, 0.3), sizes=((),), dtypes=(np.float64,), args=(31,)),
    # waveforms
    _s("sawtooth", times, sizes=(16,), width=0.3),
    _s("square", times, sizes=(16,), duty=0.3),
    _s("chirp", times, sizes=(16,), f0=1.0, t1=4.0, f1=3.0),
    _s("gausspulse", times, sizes=(16,), fc=5.0),
]

ENTRIES = WINDOWS + FILTERS
