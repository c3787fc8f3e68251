"""tf.keras.applications' ResNet50, built from Tessera's layers with
Keras' architecture and layer names (conv1_pad, conv1_conv, ...,
conv5_block3_out, avg_pool, predictions), so a program that calls

    model = tf.keras.applications.ResNet50(weights=None,
                                           input_shape=(32, 32, 3),
                                           classes=10)

gets the same model: with classes=10, 23,608,202 parameters (53,120 of
them the batch-norm moving statistics). There are no pretrained weights
(Tessera downloads nothing): pass weights=None, or a path that
save_weights wrote.
"""

from .. import layers as _layers
from ..models import Model as _Model

__all__ = ["ResNet50", "resnet50", "resnet"]

_BN_EPSILON = 1.001e-5


def _block(x, filters, stride=1, conv_shortcut=True, name=None):
    """Keras' block1: a 1x1, 3x3, 1x1 bottleneck (4 * filters out) added
    to the input or to a 1x1 projection of it."""
    L = _layers
    if conv_shortcut:
        shortcut = L.Conv2D(4 * filters, 1, strides=stride,
                            name=name + "_0_conv")(x)
        shortcut = L.BatchNormalization(axis=3, epsilon=_BN_EPSILON,
                                        name=name + "_0_bn")(shortcut)
    else:
        shortcut = x
    x = L.Conv2D(filters, 1, strides=stride, name=name + "_1_conv")(x)
    x = L.BatchNormalization(axis=3, epsilon=_BN_EPSILON,
                             name=name + "_1_bn")(x)
    x = L.Activation("relu", name=name + "_1_relu")(x)
    x = L.Conv2D(filters, 3, padding="same", name=name + "_2_conv")(x)
    x = L.BatchNormalization(axis=3, epsilon=_BN_EPSILON,
                             name=name + "_2_bn")(x)
    x = L.Activation("relu", name=name + "_2_relu")(x)
    x = L.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    x = L.BatchNormalization(axis=3, epsilon=_BN_EPSILON,
                             name=name + "_3_bn")(x)
    x = L.Add(name=name + "_add")([shortcut, x])
    return L.Activation("relu", name=name + "_out")(x)


def _stack(x, filters, blocks, stride=2, name=None):
    x = _block(x, filters, stride=stride, name=name + "_block1")
    for i in range(2, blocks + 1):
        x = _block(x, filters, conv_shortcut=False,
                   name=name + "_block" + str(i))
    return x


def ResNet50(include_top=True, weights=None, input_tensor=None,
             input_shape=None, pooling=None, classes=1000,
             classifier_activation="softmax", **kwargs):
    """Keras' ResNet50 (He et al. 2015, v1) for channels-last images of
    `input_shape` (default (224, 224, 3); at least 32x32).

    weights: None (random initialisation) or a file save_weights wrote;
        "imagenet" is refused, as Tessera downloads nothing.
    include_top: end with global average pooling and a Dense of `classes`
        units (`classifier_activation`); otherwise end after conv5, pooled
        by `pooling` ("avg", "max" or None)."""
    unknown = sorted(set(kwargs) - {"name"})
    if unknown:
        raise TypeError("ResNet50: unknown arguments %s" % unknown)
    if weights == "imagenet":
        raise ValueError(
            "ResNet50: Tessera has no pretrained ImageNet weights and "
            "downloads nothing; pass weights=None (and load your own with "
            "model.load_weights(path))")
    if input_tensor is not None:
        img = input_tensor
    else:
        shape = tuple(input_shape) if input_shape is not None \
            else (224, 224, 3)
        if len(shape) != 3 or shape[0] < 32 or shape[1] < 32:
            raise ValueError("ResNet50: input_shape must be (height, width, "
                             "channels) with height and width at least 32, "
                             "got %r" % (shape,))
        img = _layers.Input(shape=shape)
    L = _layers
    x = L.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img)
    x = L.Conv2D(64, 7, strides=2, name="conv1_conv")(x)
    x = L.BatchNormalization(axis=3, epsilon=_BN_EPSILON, name="conv1_bn")(x)
    x = L.Activation("relu", name="conv1_relu")(x)
    x = L.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = L.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = _stack(x, 64, 3, stride=1, name="conv2")
    x = _stack(x, 128, 4, name="conv3")
    x = _stack(x, 256, 6, name="conv4")
    x = _stack(x, 512, 3, name="conv5")
    if include_top:
        x = L.GlobalAveragePooling2D(name="avg_pool")(x)
        x = L.Dense(classes, activation=classifier_activation,
                    name="predictions")(x)
    elif pooling == "avg":
        x = L.GlobalAveragePooling2D(name="avg_pool")(x)
    elif pooling == "max":
        raise ValueError("ResNet50: pooling='max' needs GlobalMaxPooling2D, "
                         "which Tessera does not have; use pooling='avg'")
    model = _Model(img, x, name=kwargs.get("name", "resnet50"))
    if weights is not None:
        model.load_weights(weights)
    return model


class resnet:
    """tf.keras.applications.resnet's ResNet50."""
    ResNet50 = staticmethod(ResNet50)


resnet50 = resnet
