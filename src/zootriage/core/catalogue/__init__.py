"""What the service knows about its libraries without importing them: plain data published from them.

The API process checks requests and labels answers with facts that live in torch's, torchvision's
and timm's registries and in the marker registry (``core.markers``); importing those takes seconds
and hundreds of MB. So the facts are published once, at build, into JSON files beside this module,
and the API reads them with the standard library only:

- ``markers.json``: every registered marker's metadata (name, group, needs, preferred direction,
  description, version) in the registry's order, and GLUE's marker fields (``core.glue.MARKERS``);
- ``torchvision.json``: every torchvision architecture with its weights (file name in torch hub's
  cache, published ImageNet acc@1, parameters, categories) and its default, and which are
  classifiers (the v1/v2 pairs come from those);
- ``timm.json``: every name ``timm.is_model`` accepts with its default pretrained tag, and every
  pretrained tag with where its file is cached (Hugging Face hub id and file, torch hub file).

``python -m zootriage.core.catalogue.publish`` (``make catalogue``) writes them from the installed
libraries; ``tests/unit/test_catalogue.py`` fails when a file no longer matches them (a new marker,
a torchvision or timm upgrade), naming that command. The worker scores with the libraries
themselves, so a stale catalogue can refuse a request the worker would take, never the reverse
silently: the test is what keeps them one.
"""
