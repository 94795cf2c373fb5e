import os

from django.core.wsgi import get_wsgi_application

from core.pg import bootstrap

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragsite.settings")
bootstrap()  # the embedded database, unless DATABASE_URL is set (settings never start it)
application = get_wsgi_application()
