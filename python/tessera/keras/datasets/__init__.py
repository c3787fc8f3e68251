"""tf.keras.datasets: Fashion-MNIST from Debian's dataset-fashion-mnist;
MNIST and CIFAR-10 from a local copy (Tessera never downloads).

Where local copies are looked for, in order: $TESSERA_DATASETS_DIR, then
~/.keras/datasets (Keras' own cache folder):
  mnist:   mnist.npz (Keras' file), or mnist/ holding the four IDX files
           (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],
           t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz])
  cifar10: cifar-10-batches-py/ (the 'python version' archive, unpacked)
"""

from . import cifar10, fashion_mnist, mnist

__all__ = ["fashion_mnist", "mnist", "cifar10"]
