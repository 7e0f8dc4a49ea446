"""Reading what to score: a Ray Dataset as is, or Parquet files, an image folder, numpy (.npy) files by path."""
import os

IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif")
FORMATS = ("parquet", "images", "numpy")
# the column each reader puts the data in (a one-input model reads it unless told otherwise)
DATA_COLUMN = {"images": "image", "numpy": "data"}


def detect(path):
    """'parquet', 'images' or 'numpy' from the path's extension, or from the files in a folder."""
    names = [path]
    if os.path.isdir(path):
        names = [os.path.join(root, f) for root, _, files in os.walk(path) for f in files]
    exts = {os.path.splitext(n)[1].lower() for n in names}
    if ".parquet" in exts:
        return "parquet"
    if ".npy" in exts:
        return "numpy"
    if exts & set(IMAGE_EXTS):
        return "images"
    raise ValueError(f"cannot tell the format of {path!r} (files ending {sorted(exts)[:5]}): "
                     f"pass input_format= one of {FORMATS}")


def read(source, input_format=None, image_size=None, image_mode="RGB"):
    """(dataset, format): format is None for a Dataset passed in. Parquet and image reads claim no CPU
    (num_cpus=0: they are I/O, and a read waiting for a CPU behind actors holding them all would never start)."""
    import ray.data as rd

    if isinstance(source, rd.Dataset):
        return source, input_format
    path = os.fspath(source)
    kind = input_format or detect(path)
    if kind == "parquet":
        return rd.read_parquet(path, num_cpus=0), kind
    if kind == "images":
        return rd.read_images(path, include_paths=True, size=image_size, mode=image_mode,
                              num_cpus=0), kind
    if kind == "numpy":
        return rd.read_numpy(path, include_paths=True), kind
    raise ValueError(f"input_format must be one of {FORMATS}, not {kind!r}")
