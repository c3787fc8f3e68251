"""BeginBlock: placing a model's layers on IPUs.

A traced model's ONNX nodes are named after the module that made them
("/layer2/conv/Conv"), so the nodes of a marked module and everything
after it, until the next marked module, take its IPU: the
"__ipu_number" node attribute Tessera's ONNX importer places them by.
The model is edited through protobuf with a schema of just the fields
touched (model.graph.node[].name and .attribute[]); every other field is
kept as an unknown field and written back unchanged.
"""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_PACKAGE = "tessera_poptorch_onnx_subset"


def BeginBlock(module, user_id=None, ipu_id=None):
    """Marks module: it and the layers that run after it (until the next
    BeginBlock) are placed on IPU ipu_id. Returns the module itself, so
    ``model.layer2 = poptorch.BeginBlock(model.layer2, ipu_id=1)``
    keeps the parameter names."""
    if ipu_id is None or int(ipu_id) < 0:
        raise ValueError(f"BeginBlock: ipu_id {ipu_id!r} must be an IPU "
                         "number (0, 1, ...)")
    module._poptorch_ipu_id = int(ipu_id)
    module._poptorch_user_id = user_id
    return module


def block_scopes(model):
    """(node name prefix, ipu) of every BeginBlock in model."""
    scopes = []
    for name, m in model.named_modules():
        ipu = getattr(m, "_poptorch_ipu_id", None)
        if ipu is not None:
            path = "/" + name.replace(".", "/") + "/" if name else "/"
            scopes.append((path, ipu))
    return scopes


def _schema():
    f = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(
        name=_PACKAGE + ".proto", package=_PACKAGE, syntax="proto2")

    def message(name, fields):
        m = fd.message_type.add(name=name)
        for field, number, kind, label, type_name in fields:
            d = m.field.add(name=field, number=number, type=kind,
                            label=label)
            if type_name:
                d.type_name = f".{_PACKAGE}.{type_name}"

    one, many = f.LABEL_OPTIONAL, f.LABEL_REPEATED
    # Field numbers as onnx.proto has them.
    message("Attribute", [("name", 1, f.TYPE_STRING, one, None),
                          ("i", 3, f.TYPE_INT64, one, None),
                          ("type", 20, f.TYPE_INT32, one, None)])
    message("Node", [("name", 3, f.TYPE_STRING, one, None),
                     ("attribute", 5, f.TYPE_MESSAGE, many, "Attribute")])
    message("Graph", [("node", 1, f.TYPE_MESSAGE, many, "Node")])
    message("Model", [("graph", 7, f.TYPE_MESSAGE, one, "Graph")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    descriptor = pool.FindMessageTypeByName(_PACKAGE + ".Model")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


_ATTRIBUTE_INT = 2  # AttributeProto.INT


def place_nodes(proto, scopes):
    """proto with every node given the IPU of the last BeginBlock scope
    entered at or before it (IPU 0 before the first); also returns the
    number of IPUs used."""
    if not scopes:
        return proto, 1
    model = _schema()()
    model.ParseFromString(proto)
    ipu, used = 0, {0}
    for node in model.graph.node:
        inside = [(len(p), i) for p, i in scopes if node.name.startswith(p)]
        if inside:
            ipu = max(inside)[1]
        used.add(ipu)
        a = node.attribute.add()
        a.name, a.i, a.type = "__ipu_number", ipu, _ATTRIBUTE_INT
    return model.SerializeToString(), max(used) + 1
